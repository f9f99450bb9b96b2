"""Every metric family bpm exports, by name, with its help text and labels: the observer,
the collectors, the docs' table, the alert rules and the dashboard all name these."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


class Source(StrEnum):
    """Where a family's values come from, and so which scrape job has them."""

    #: Counted by the process that did the work (workers, servers, embedded runtimes).
    PROCESS = "process"
    #: Read from the database at scrape time (``bpm serve``'s ``/metrics``).
    DATABASE = "database"
    #: Counted by the HTTP server.
    SERVER = "server"
    #: Counted by a Celery worker process.
    WORKER = "worker"


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    kind: Kind
    source: Source
    labels: tuple[str, ...]
    help: str

    def series_names(self) -> tuple[str, ...]:
        """The names its samples carry in the text format."""
        if self.kind is Kind.COUNTER:
            return (f"{self.name}_total", f"{self.name}_created")
        if self.kind is Kind.HISTOGRAM:
            return tuple(f"{self.name}_{s}" for s in ("bucket", "count", "sum", "created"))
        return (self.name,)


def _f(name: str, kind: Kind, source: Source, labels: tuple[str, ...], text: str) -> Family:
    return Family(name, kind, source, labels, text)


P, D, S, W = Source.PROCESS, Source.DATABASE, Source.SERVER, Source.WORKER
C, G, H = Kind.COUNTER, Kind.GAUGE, Kind.HISTOGRAM

INSTANCES_STARTED = _f(
    "bpm_instances_started", C, P, ("process_key",), "Instances started, by process key."
)
INSTANCES_ENDED = _f(
    "bpm_instances_ended",
    C,
    P,
    ("process_key", "state"),
    "Instances that reached COMPLETED, FAILED, TERMINATED or CANCELLED, by process key.",
)
INSTANCE_DURATION = _f(
    "bpm_instance_duration_seconds",
    H,
    P,
    ("process_key",),
    "Start to end of instances that ended for good (COMPLETED, TERMINATED, CANCELLED).",
)
STEP_DURATION = _f(
    "bpm_step_duration_seconds",
    H,
    P,
    ("node_type",),
    "One committed token step (its transaction), by the type of the node it started at.",
)
HANDLER_DURATION = _f(
    "bpm_handler_duration_seconds",
    H,
    P,
    ("handler", "outcome"),
    "Handler runs, by handler name and outcome (ok, bpmn_error, failed).",
)
CONFLICTS = _f(
    "bpm_conflicts",
    C,
    P,
    ("kind",),
    "Transactions tried again after losing a race (version) or a retryable database error.",
)
LIVE_INSTANCES = _f(
    "bpm_live_instances", G, D, ("process_key", "state"), "RUNNING and FAILED instances."
)
RUNNABLE = _f(
    "bpm_runnable", G, D, ("queue",), "Rows waiting for a job (ACTIVE tokens, due handler tasks)."
)
RUNNABLE_AGE = _f(
    "bpm_runnable_oldest_age_seconds",
    G,
    D,
    ("queue",),
    "How long the oldest runnable row of a queue has waited (0 when none waits).",
)
LATE_TIMERS = _f(
    "bpm_timers_late",
    G,
    D,
    ("late_seconds",),
    "Timers due at least late_seconds ago that have not fired.",
)
EXPIRED_LOCKS = _f(
    "bpm_expired_locks", G, D, ("kind",), "Tasks still LOCKED after their lock expired."
)
OPEN_INCIDENTS = _f("bpm_open_incidents", G, D, ("process_key", "activity"), "Open incidents.")
EXTERNAL_TASKS = _f(
    "bpm_external_tasks", G, D, ("topic", "state"), "READY and LOCKED external tasks."
)
SNAPSHOT_SECONDS = _f(
    "bpm_metrics_snapshot_seconds",
    G,
    D,
    (),
    "How long the last database read of these families took.",
)
API_REQUESTS = _f(
    "bpm_api_requests",
    C,
    S,
    ("method", "route", "status"),
    "HTTP requests, by route template and status.",
)
API_LATENCY = _f(
    "bpm_api_request_duration_seconds",
    H,
    S,
    ("method", "route"),
    "HTTP request latency, by route template.",
)
WORKER_JOBS = _f(
    "bpm_worker_jobs", C, W, ("job", "outcome"), "Celery jobs run, by job name and outcome."
)
WORKER_JOB_DURATION = _f(
    "bpm_worker_job_duration_seconds", H, W, ("job",), "Celery job durations, by job name."
)

FAMILIES: tuple[Family, ...] = (
    INSTANCES_STARTED,
    INSTANCES_ENDED,
    INSTANCE_DURATION,
    STEP_DURATION,
    HANDLER_DURATION,
    CONFLICTS,
    LIVE_INSTANCES,
    RUNNABLE,
    RUNNABLE_AGE,
    LATE_TIMERS,
    EXPIRED_LOCKS,
    OPEN_INCIDENTS,
    EXTERNAL_TASKS,
    SNAPSHOT_SECONDS,
    API_REQUESTS,
    API_LATENCY,
    WORKER_JOBS,
    WORKER_JOB_DURATION,
)


def series_names() -> frozenset[str]:
    """Every sample name bpm exports (what a query or an alert rule may name)."""
    return frozenset(n for f in FAMILIES for n in (f.name, *f.series_names()))
