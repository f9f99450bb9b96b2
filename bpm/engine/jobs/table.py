"""The one table of jobs: for each job name, its queue, its arguments and how they are
decoded, and the engine function it runs.

The Celery tasks (``bpm_workers/tasks.py``), the routes and beat's schedule, ``Engine.run_job``
(the embedded loop) and ``Engine.run_scans`` are all generated from ``JOBS``: a new job is
one entry here (and its name in ``JobName``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from bpm.dispatch import Job, JobName
from bpm.engine.core.causes import because
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.jobs.args import (
    Arg,
    as_flag,
    as_optional_str,
    as_optional_uuid,
    as_sent,
    as_str,
    as_uuid,
    as_version,
)
from bpm.engine.jobs.spec import (
    Call,
    CorrelationRefused,
    Done,
    Found,
    JobEngine,
    JobQueue,
    JobSettings,
    JobSpec,
    Period,
    Scan,
    StartRefused,
)
from bpm.engine.operations import retention, scans, signal_deliveries, signals, timers
from bpm.engine.operations.scans import ScanConfig

# --- what each job runs -------------------------------------------------------------------


def _advance(call: Call) -> Done:
    a = call.args
    return Done(call.engine.runner.advance(a["token_id"], a["expected_version"]))


def _run_handler(call: Call) -> Done:
    return Done(call.engine.runner.run_handler(call.args["task_id"]))


def _run_compensation(call: Call) -> Done:
    a = call.args
    return Done(call.engine.runner.run_compensation(a["token_id"], a["expected_version"]))


def _start(call: Call) -> Done:
    """Start the instance and go on with it in this job (one broker hop less); a sender
    waiting on the result gets its id, and whether this message made it."""
    a = call.args
    started = call.engine.start(
        a["process_key"],
        a["variables"],
        business_key=a["business_key"],
        idempotency_key=a["idempotency_key"],
        message_id=call.message_id,
        run_now=True,
    )
    made = "started" if started.created else "existing"
    answer = {"instance_id": str(started.id), "created": started.created}
    return Done(f"{made} {started.id}", answer)


def _correlate(call: Call) -> Done:
    a = call.args
    woken = call.engine.correlate(
        a["message"],
        business_key=a["business_key"],
        instance_id=a["instance_id"],
        variables=a["variables"],
        all_waiting=a["all"],
        start_messages_only=a["start_messages_only"],
        idempotency_key=a["idempotency_key"],
        message_id=call.message_id,
    )
    return Done("correlated " + ",".join(str(t) for t in woken))


def _throw_signal(call: Call) -> Done:
    """Throw once per request: the message's id is the throw's key."""
    a = call.args
    key = a["throw_key"] or call.message_id
    thrown = signals.throw(call.engine.core, a["name"], a["variables"], throw_key=key)
    made = "thrown" if thrown.created else "existing"
    answer = {"signal_id": str(thrown.signal_id), "recipients": thrown.recipients}
    return Done(f"{made} {thrown.signal_id} recipients={thrown.recipients}", answer)


def _deliver_signal(call: Call) -> Done:
    """One bounded batch; the rest in a fresh run of this job, so other work gets its turn."""
    core, batch = call.engine.core, call.settings.signal_batch
    done = signal_deliveries.deliver(core, call.args["signal_id"], batch)
    outcome = f"delivered={done.delivered} skipped={done.skipped} more={done.more}"
    return Done(outcome, again=done.more)


def _cleanup_history(call: Call) -> Done:
    """One bounded sweep; a backlog carries on in a fresh job, so the scans queue moves."""
    core = call.engine.core
    swept = retention.sweep(core, core.clock.now(), default_ttl=call.settings.history_ttl)
    outcome = f"deleted={swept.deleted} batches={swept.batches} more={swept.more}"
    return Done(outcome, again=swept.more and swept.deleted > 0)


def _counted(name: str, scan: Callable[[EngineCore, datetime, ScanConfig], int]) -> Scan:
    """A scan that returns how many rows it found; its log line shows that count by name."""

    def run(core: EngineCore, now: datetime, cfg: ScanConfig) -> Found:
        n = scan(core, now, cfg)
        return Found(n, f"{name}={n}")

    return Scan(name, run)


def _fire_timers(core: EngineCore, now: datetime, cfg: ScanConfig) -> Found:
    fired = timers.scan_timers(core, now, cfg.batch)
    late = max((f.lateness.total_seconds() * 1000 for f in fired), default=0.0)
    return Found(len(fired), f"fired={len(fired)} lateness_max_ms={late:.0f}")


def _scan_job(name: JobName, every: Period, *parts: Scan) -> JobSpec:
    """A recovery scan: it runs ``parts`` in order and reports what each found."""

    def run(call: Call) -> Done:
        core = call.engine.core
        now = core.clock.now()
        return Done(" ".join(p.run(core, now, call.settings.scan).shown for p in parts))

    return JobSpec(name, JobQueue.SCANS, run, scans=parts, every=every)


# --- the table ----------------------------------------------------------------------------

_TOKEN = (
    Arg("token_id", as_uuid, logged=True),
    Arg("expected_version", as_version),
)

JOBS: Mapping[str, JobSpec] = {
    spec.name: spec
    for spec in (
        JobSpec(JobName.ADVANCE_TOKEN, JobQueue.TOKENS, _advance, _TOKEN),
        JobSpec(
            JobName.RUN_HANDLER,
            JobQueue.HANDLERS,
            _run_handler,
            (Arg("task_id", as_uuid, logged=True),),
        ),
        JobSpec(JobName.RUN_COMPENSATION, JobQueue.COMPENSATION, _run_compensation, _TOKEN),
        JobSpec(
            JobName.START_INSTANCE,
            JobQueue.STARTS,
            _start,
            (
                Arg("process_key", as_str, logged=True),
                Arg("variables", as_sent, required=False),
                Arg("business_key", as_optional_str, required=False, logged=True),
                Arg("idempotency_key", as_optional_str, required=False),
            ),
            refusal=StartRefused,
            keyed_by_message=True,
        ),
        JobSpec(
            JobName.CORRELATE_MESSAGE,
            JobQueue.STARTS,
            _correlate,
            (
                Arg("message", as_str, logged=True),
                Arg("business_key", as_optional_str, required=False),
                Arg("instance_id", as_optional_uuid, required=False),
                Arg("variables", as_sent, required=False),
                Arg("all", as_flag, required=False),
                Arg("start_messages_only", as_flag, required=False),
                Arg("idempotency_key", as_optional_str, required=False),
            ),
            refusal=CorrelationRefused,
            keyed_by_message=True,
        ),
        JobSpec(
            JobName.THROW_SIGNAL,
            JobQueue.STARTS,
            _throw_signal,
            (
                Arg("name", as_str, logged=True),
                Arg("variables", as_sent, required=False),
                Arg("throw_key", as_optional_str, required=False),
            ),
            keyed_by_message=True,
        ),
        JobSpec(
            JobName.DELIVER_SIGNAL,
            JobQueue.TOKENS,
            _deliver_signal,
            (Arg("signal_id", as_uuid, logged=True),),
        ),
        # Recovery: the order a starting worker sends them and ``run_scans`` runs them.
        _scan_job(JobName.SCAN_TIMERS, Period.TIMERS, Scan("timers", _fire_timers)),
        _scan_job(
            JobName.SCAN_LOCKS,
            Period.SCANS,
            _counted("expired_locks", scans.scan_expired_locks),
        ),
        _scan_job(
            JobName.SCAN_STALLED,
            Period.SCANS,
            _counted("stalled_tokens", scans.scan_stalled_tokens),
            _counted("ready_tasks", scans.scan_ready_tasks),
            _counted("waiting_parents", scans.scan_waiting_parents),
            _counted("unfinished_signals", scans.scan_unfinished_signals),
        ),
        JobSpec(JobName.CLEANUP_HISTORY, JobQueue.SCANS, _cleanup_history, every=Period.CLEANUP),
    )
}

#: The scans a starting worker asks for once: recovery is just running the scans.
RECOVERY_SCANS = tuple(spec.name for spec in JOBS.values() if spec.scans)


def spec_of(name: str) -> JobSpec:
    try:
        return JOBS[name]
    except KeyError:
        known = ", ".join(JOBS)
        raise ValueError(f"unknown job {name!r}: the jobs are {known}") from None


def run_job(engine: JobEngine, job: Job, settings: JobSettings | None = None) -> str:
    """Run one job by name in this process (the embedded loop, tests): decoded and run
    exactly as a Celery task does it; a job that leaves work for a fresh run of itself
    sends that run through the engine's dispatcher."""
    spec = spec_of(job.name)
    # The cause its history rows carry names the ids a worker's log line shows, never the
    # variables a start or a message brings.
    with because(f"{job.name} {_fmt(spec.logged((), job.args))}".strip()):
        call = Call(engine, spec.decode((), job.args), settings or JobSettings())
        done = spec.run(call)
    if done.again:
        engine.core.dispatcher.dispatch([Job(job.name, job.args)])
    return done.outcome


def run_all_scans(
    core: EngineCore, now: datetime | None = None, cfg: ScanConfig | None = None
) -> dict[str, int]:
    """Every recovery scan's parts once, in the table's order: what a starting worker asks
    for, and what beat sends on schedule. Returns what each found."""
    at, config = now or core.clock.now(), cfg or ScanConfig()
    return {
        part.name: part.run(core, at, config).count
        for name in RECOVERY_SCANS
        for part in JOBS[name].scans
    }


def _fmt(args: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in args.items())
