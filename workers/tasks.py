"""The Celery tasks: thin adapters that decode ids and call the engine.

Each logs one line per job with its name, ids, outcome (done / stale no-op / deferred /
dropped / refused / requeued / failed) and duration. While the database is unreachable a job
waits for it (``BPM_OUTAGE_WAIT`` seconds at most). What happens after that depends on
whether a row records the job's work: a token, task or timer job is logged as failed and the
scans redo it from its row; a request that exists only in its message (``MESSAGE_ONLY``:
a start, a correlation) is put back in its queue instead of being acknowledged. Any other
unexpected error is logged, never raised into Celery, so no message loops and no queue
blocks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.exceptions import Reject

from bpm.engine.engine import because
from bpm.engine.operations import retention, scans, timers
from bpm.errors import BpmError
from bpm.store import DatabaseUnavailable, RetryableDatabaseError
from bpm.store.outages import until_available
from workers.config import MESSAGE_ONLY, SCAN_JOBS, Settings
from workers.jobs import PoisonMessage, as_optional_str, as_uuid, as_version, bind
from workers.runtime import engine_for, scan_config

log = logging.getLogger("bpm.jobs")
#: Seconds before a request that failed unexpectedly goes back to its queue.
REQUEUE_PAUSE = 5.0


class CorrelationRefused(Exception):
    """Raised to a sender that waits for the result of a correlation that was refused."""


class StartRefused(Exception):
    """Raised to a sender that waits for the result of a start that was refused (an unknown
    process key, bad variables)."""


def _run(
    name: str,
    ids: dict[str, Any],
    fn: Callable[[], str],
    settings: Settings,
    refusals: list[Exception] | None = None,
) -> str:
    """Run one job and log its line; a refusal (or a message that cannot be a job) is also
    put in ``refusals``, for a task that reports it to a sender waiting on the result
    backend. A request that exists only in its message is never acknowledged unless it was
    carried out or refused: on any other failure it goes back to its queue."""
    started = time.perf_counter()
    try:
        with because(f"{name} {_fmt(ids)}".strip()):  # written into the history rows it makes
            outcome = until_available(fn, within=settings.outage_wait, what=f"job {name}")
    except (DatabaseUnavailable, RetryableDatabaseError) as exc:
        if name in MESSAGE_ONLY:  # acknowledging it would lose the request: back it goes
            log.warning("job=%s outcome=requeued reason=%s %s", name, exc, _fmt(ids))
            raise Reject(str(exc), requeue=True) from None  # the warning says it all
        outcome = "failed"
        log.warning(
            "job=%s outcome=failed reason=%s %s (the scans redo it once the database answers)",
            name,
            exc,
            _fmt(ids),
        )
    except PoisonMessage as exc:
        outcome = "dropped"
        if refusals is not None:
            refusals.append(exc)
        log.warning("job=%s outcome=dropped reason=%s args=%s", name, exc, ids)
    except BpmError as exc:
        outcome = "refused"
        if refusals is not None:
            refusals.append(exc)
        log.warning("job=%s outcome=refused reason=%s %s", name, exc, _fmt(ids))
    except Exception as exc:
        if name in MESSAGE_ONLY:
            log.exception(
                "job=%s outcome=requeued %s (an unexpected error: tried again in %.0f s)",
                name,
                _fmt(ids),
                REQUEUE_PAUSE,
            )
            time.sleep(REQUEUE_PAUSE)  # a request that keeps failing must not spin a worker
            raise Reject(str(exc), requeue=True) from None
        outcome = "failed"
        log.exception("job=%s outcome=failed %s (the scans will retry it)", name, _fmt(ids))
    ms = (time.perf_counter() - started) * 1000
    # A scan that found nothing is logged at DEBUG: beat sends one every second.
    level = logging.DEBUG if name in SCAN_JOBS and _found_nothing(outcome) else logging.INFO
    log.log(
        level,
        "job=%s %s outcome=%s ms=%.1f",
        name,
        _fmt(ids),
        outcome,
        ms,
        # Nested: a job argument named like a LogRecord attribute ("message") would
        # make logging raise.
        extra={"action": name, "outcome": outcome, "duration_ms": ms, "job_args": ids},
    )
    return outcome


def _found_nothing(outcome: str) -> bool:
    """``stalled_tokens=0 ready_tasks=0`` and the like: every count zero (how many batches
    a cleanup took says nothing of what it found)."""
    counts = dict(part.split("=", 1) for part in outcome.split() if "=" in part)
    counts.pop("batches", None)
    return bool(counts) and all(v in ("0", "False") for v in counts.values())


def _fmt(ids: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in ids.items())


def register(app: Celery, settings: Settings) -> None:
    """Define the Celery tasks bpm's jobs run as, on ``app``."""

    def run(
        name: str,
        ids: dict[str, Any],
        fn: Callable[[], str],
        refusals: list[Exception] | None = None,
    ) -> str:
        return _run(name, ids, fn, settings, refusals)

    @app.task(name="bpm.advance_token", ignore_result=True)
    def advance_token(*args: Any, **kwargs: Any) -> str:
        def go() -> str:
            a = bind(("token_id", "expected_version"), args, kwargs, 2)
            token_id, version = (
                as_uuid(a["token_id"], "token_id"),
                as_version(a["expected_version"]),
            )
            return engine_for(app, settings).advance(token_id, version)

        return run("bpm.advance_token", {"token_id": kwargs.get("token_id", args[:1])}, go)

    @app.task(name="bpm.run_handler", ignore_result=True)
    def run_handler(*args: Any, **kwargs: Any) -> str:
        def go() -> str:
            a = bind(("task_id",), args, kwargs, 1)
            return engine_for(app, settings).run_handler(as_uuid(a["task_id"], "task_id"))

        return run("bpm.run_handler", {"task_id": kwargs.get("task_id", args[:1])}, go)

    # ``throws``: a refusal is the sender's answer, not a fault; Celery logs it without a
    # traceback.
    @app.task(
        name="bpm.start_instance",
        bind=True,
        throws=(StartRefused,),
        ignore_result=settings.result_backend is None,
    )
    def start_instance(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Start an instance; with BPM_RESULT_BACKEND set, a sender's ``result.get()`` gets
        the instance id, or sees a refused start (an unknown process key) as an error."""
        refused: list[Exception] = []
        made: dict[str, Any] = {}

        def go() -> str:
            a = bind(
                ("process_key", "variables", "business_key", "idempotency_key"), args, kwargs, 1
            )
            key = as_optional_str(a["process_key"], "process_key")
            assert key is not None
            started = engine_for(app, settings).start(
                key,
                a.get("variables"),
                business_key=as_optional_str(a.get("business_key"), "business_key"),
                idempotency_key=as_optional_str(a.get("idempotency_key"), "idempotency_key"),
                # The last fallback of the start key: a redelivered message keeps its id.
                message_id=f"celery:{self.request.id}",
                run_now=True,
            )  # this job goes on with the instance: one broker hop less
            made.update(instance_id=str(started.id), created=started.created)
            return f"started {started.id}" if started.created else f"existing {started.id}"

        ids = {"process_key": kwargs.get("process_key"), "business_key": kwargs.get("business_key")}
        outcome = run("bpm.start_instance", ids, go, refused)
        if refused and settings.result_backend is not None:
            raise StartRefused(str(refused[0]))
        return {"outcome": outcome, **made}

    @app.task(name="bpm.scan_stalled", ignore_result=True)
    def scan_stalled() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            now, cfg = engine.clock.now(), scan_config(settings)
            found = {
                "stalled_tokens": scans.scan_stalled_tokens(engine.core, now, cfg),
                "ready_tasks": scans.scan_ready_tasks(engine.core, now, cfg),
                "waiting_parents": scans.scan_waiting_parents(engine.core, now, cfg),
            }
            return " ".join(f"{k}={v}" for k, v in found.items())

        return run("bpm.scan_stalled", {}, go)

    @app.task(name="bpm.run_compensation", ignore_result=True)
    def run_compensation(*args: Any, **kwargs: Any) -> str:
        def go() -> str:
            a = bind(("token_id", "expected_version"), args, kwargs, 2)
            token_id = as_uuid(a["token_id"], "token_id")
            version = as_version(a["expected_version"])
            return engine_for(app, settings).runner.run_compensation(token_id, version)

        return run("bpm.run_compensation", {"token_id": kwargs.get("token_id", args[:1])}, go)

    @app.task(name="bpm.scan_timers", ignore_result=True)
    def scan_timers() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            fired = timers.scan_timers(engine.core, engine.clock.now())
            late = max((f.lateness.total_seconds() * 1000 for f in fired), default=0.0)
            return f"fired={len(fired)} lateness_max_ms={late:.0f}"

        return run("bpm.scan_timers", {}, go)

    @app.task(
        name="bpm.correlate_message",
        throws=(CorrelationRefused,),
        ignore_result=settings.result_backend is None,
    )
    def correlate_message(*args: Any, **kwargs: Any) -> dict[str, Any]:
        """Deliver a message; with BPM_RESULT_BACKEND set, a sender's ``result.get()`` sees
        a correlation that matched nothing as an error."""
        refused: list[Exception] = []

        def go() -> str:
            a = bind(
                ("message", "business_key", "instance_id", "variables", "all"), args, kwargs, 1
            )
            message = as_optional_str(a["message"], "message")
            assert message is not None
            instance = a.get("instance_id")
            woken = engine_for(app, settings).correlate(
                message,
                business_key=as_optional_str(a.get("business_key"), "business_key"),
                instance_id=as_uuid(instance, "instance_id") if instance else None,
                variables=a.get("variables"),
                all_waiting=bool(a.get("all", False)),
            )
            return "correlated " + ",".join(str(t) for t in woken)

        outcome = run(
            "bpm.correlate_message", {"message": kwargs.get("message", args[:1])}, go, refused
        )
        if refused and settings.result_backend is not None:
            raise CorrelationRefused(str(refused[0]))
        return {"outcome": outcome}

    @app.task(name="bpm.scan_locks", ignore_result=True)
    def scan_locks() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            n = scans.scan_expired_locks(engine.core, engine.clock.now(), scan_config(settings))
            return f"expired_locks={n}"

        return run("bpm.scan_locks", {}, go)

    @app.task(name="bpm.cleanup_history", ignore_result=True)
    def cleanup_history() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            swept = retention.sweep(
                engine.core, engine.clock.now(), default_ttl=settings.history_ttl
            )
            if swept.more and swept.deleted:  # a backlog: carry on in a fresh job
                cleanup_history.apply_async(queue=settings.route("bpm.cleanup_history"))
            return f"deleted={swept.deleted} batches={swept.batches} more={swept.more}"

        return run("bpm.cleanup_history", {}, go)
