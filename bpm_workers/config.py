"""Celery settings the engine's semantics rely on, read from the environment.

JSON only; a message is acknowledged after its job ran (``task_acks_late``) and put back if the
worker process died (``task_reject_on_worker_lost``); one message at a time per process
(prefetch 1). For token and task jobs none of this is needed for correctness (the scans find
their rows), only for fast recovery and evenly spread work. A start or a correlation exists only
in its message: late acknowledgement is what brings one back after a worker died, and what lets
a job that could not run put its message back (``MESSAGE_ONLY``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from kombu.entity import Exchange, Queue

from bpm.engine.jobs.runner import CHAIN_SECONDS, CHAIN_STEPS
from bpm.engine.jobs.spec import JobQueue
from bpm.engine.jobs.table import JOBS
from bpm.engine.operations.retention import ttl_from_env
from bpm.errors import ConfigError

TOKENS, HANDLERS, COMPENSATION, STARTS, SCANS = (
    JobQueue.TOKENS,
    JobQueue.HANDLERS,
    JobQueue.COMPENSATION,
    JobQueue.STARTS,
    JobQueue.SCANS,
)
QUEUES = tuple(JobQueue)

#: Task name -> queue, from the job table (task names are stable: other services send them
#: by name). Requests from other services (starts, messages) share a queue.
ROUTES: dict[str, JobQueue] = {name: spec.queue for name, spec in JOBS.items()}

#: The jobs beat sends on a schedule: a run that found nothing is not worth a log line.
SCAN_JOBS = frozenset(name for name, queue in ROUTES.items() if queue is JobQueue.SCANS)

#: Jobs whose request exists only in its message: no row records it, so no scan could ever
#: redo one that was acknowledged without running. They are the requests other services send,
#: all on the starts queue (``JobSpec.message_only``), so a request job added there later is
#: one of them too. While the database is down, or on any unexpected failure, they go back to
#: their queue instead.
MESSAGE_ONLY = frozenset(name for name, spec in JOBS.items() if spec.message_only)


@dataclass(frozen=True)
class Settings:
    broker_url: str
    queue_prefix: str
    visibility_timeout: int
    scan_interval: float
    stall_grace: float
    timer_interval: float = 1.0
    result_backend: str | None = None
    #: Retention: seconds between beat's history cleanups, and the default TTL of ended
    #: instances whose definition has no historyTimeToLive (None: they are kept).
    cleanup_interval: float = 86400.0
    history_ttl: timedelta | None = None
    #: Seconds a job waits for an unreachable database before it gives up (see MESSAGE_ONLY).
    outage_wait: float = 60.0
    #: Level of the per-job log lines (logger ``bpm.jobs``): INFO shows one line per job.
    job_log_level: str = "INFO"
    #: Where beat keeps its schedule file (``BPM_STATE_DIR``), never the working directory.
    state_dir: Path = Path("bpm-state")
    #: Signal deliveries per transaction (``BPM_SIGNAL_BATCH``).
    signal_batch: int = 200
    #: How far one job goes on in this process (steps, seconds) before it queues the rest
    #: (``BPM_CHAIN_STEPS``, ``BPM_CHAIN_SECONDS``).
    chain_steps: int = CHAIN_STEPS
    chain_seconds: float = CHAIN_SECONDS

    def queue(self, name: str) -> str:
        return f"{self.queue_prefix}{name}"

    def route(self, task_name: str) -> str:
        return self.queue(ROUTES[task_name])


def settings_from_env() -> Settings:
    return Settings(
        broker_url=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0"),
        queue_prefix=os.environ.get("BPM_QUEUE_PREFIX", ""),
        # How long a message a dead worker held waits before Redis hands it out again (a
        # start request sent to a worker killed with -9 comes back after this long). A
        # running job handed out again meanwhile is a version-checked no-op.
        visibility_timeout=int(os.environ.get("BPM_VISIBILITY_TIMEOUT", "600")),
        scan_interval=float(os.environ.get("BPM_SCAN_INTERVAL", "5")),
        stall_grace=float(os.environ.get("BPM_STALL_GRACE", "30")),
        # Timers fire within this many seconds of their due time.
        timer_interval=float(os.environ.get("BPM_TIMER_INTERVAL", "1")),
        # Only for senders of bpm.correlate_message that want to see a no-match as an error.
        result_backend=os.environ.get("BPM_RESULT_BACKEND") or None,
        cleanup_interval=float(os.environ.get("BPM_CLEANUP_INTERVAL", "86400")),
        history_ttl=ttl_from_env(),
        outage_wait=float(os.environ.get("BPM_OUTAGE_WAIT", "60")),
        job_log_level=os.environ.get("BPM_JOB_LOG_LEVEL", "INFO").upper(),
        state_dir=state_dir_from_env(),
        signal_batch=int(os.environ.get("BPM_SIGNAL_BATCH", "200")),
        chain_steps=_number("BPM_CHAIN_STEPS", str(CHAIN_STEPS), int),
        chain_seconds=_number("BPM_CHAIN_SECONDS", str(CHAIN_SECONDS), float),
    )


def _number(name: str, default: str, kind: type[int] | type[float]) -> Any:
    """A positive number from the environment, checked when the worker starts: an engine that
    refused it later, inside each job, would have every message taken and refused."""
    text = os.environ.get(name, default)
    try:
        value = kind(text)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {text!r}") from None
    if not value > 0:
        raise ConfigError(f"{name} must be above 0, got {text!r}")
    return value


def state_dir_from_env() -> Path:
    """``BPM_STATE_DIR``, else ``$XDG_STATE_HOME/bpm``, else ``~/.local/state/bpm``: files
    the processes keep for themselves (beat's schedule) go there, so the working directory
    (often a checkout) stays clean."""
    explicit = os.environ.get("BPM_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME")
    return (Path(base) if base else Path.home() / ".local" / "state") / "bpm"


def queue_problem(consumed: set[str], s: Settings) -> str | None:
    """What is wrong with the queues a worker consumes, or None.

    A worker may leave some of bpm's queues to others (handler-only hosts, say); consuming
    none of them is always a mistake, most often ``-Q`` names without ``BPM_QUEUE_PREFIX``.
    """
    expected = [s.queue(q) for q in QUEUES]
    if consumed & set(expected):
        return None
    return (
        f"THIS WORKER CONSUMES NONE OF BPM'S QUEUES: it listens on "
        f"{', '.join(sorted(consumed)) or 'nothing'}, but with BPM_QUEUE_PREFIX="
        f"{s.queue_prefix!r} jobs are sent to {', '.join(expected)}. Start it without -Q "
        f"(it then consumes exactly those), or name those queues"
    )


def transport_options(s: Settings) -> dict[str, int]:
    """Redis puts a dead worker's unacknowledged messages back once they are older than the
    visibility timeout. A start request exists nowhere but in its message, so the sweep that
    finds them runs every few seconds (one cheap sorted-set read) instead of kombu's default
    of about every 100 s."""
    return {
        "visibility_timeout": s.visibility_timeout,
        "unacked_restore_interval": max(1, min(10, s.visibility_timeout // 2)),
        "unacked_restore_throttle": 1,
    }


def celery_config(s: Settings) -> dict[str, object]:
    return {
        "broker_url": s.broker_url,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "event_serializer": "json",
        "task_ignore_result": True,
        "result_backend": s.result_backend,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": transport_options(s),
        "broker_connection_retry_on_startup": True,
        # Each queue its own direct exchange and routing key, as a sender that only knows
        # the queue's name creates them (without them Celery binds every queue to the
        # default queue's exchange and key).
        "task_queues": [
            Queue(s.queue(q), Exchange(s.queue(q), type="direct"), routing_key=s.queue(q))
            for q in QUEUES
        ],
        "task_default_queue": s.queue(TOKENS),
        "task_routes": {str(name): {"queue": s.route(name)} for name in ROUTES},
        "worker_hijack_root_logger": False,
        # ``beat -s FILE`` still wins; the scheduler creates the directory.
        "beat_schedule_filename": str(s.state_dir / "celerybeat-schedule"),
        "beat_scheduler": "bpm_beat.scheduler:StateDirScheduler",
        "task_send_sent_event": True,
        "worker_send_task_events": True,
    }
