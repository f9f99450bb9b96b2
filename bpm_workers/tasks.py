"""The Celery tasks, one per entry of the job table (``bpm.engine.jobs.table``): each
decodes its message as the entry says and runs the entry's function.

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
from collections.abc import Callable, Sequence
from typing import Any

from celery import Celery
from celery.exceptions import Reject

from bpm.engine.engine import because
from bpm.engine.jobs.args import PoisonMessage
from bpm.engine.jobs.spec import Call, CorrelationRefused, Done, JobSpec, StartRefused
from bpm.engine.jobs.table import JOBS
from bpm.errors import BpmError
from bpm.limits import shortened
from bpm.store import DatabaseUnavailable, RetryableDatabaseError
from bpm.store.outages import until_available
from bpm_workers.config import MESSAGE_ONLY, SCAN_JOBS, Settings
from bpm_workers.metrics import job_done
from bpm_workers.quiet_scans import report_found_work
from bpm_workers.runtime import engine_for, job_settings

__all__ = ["CorrelationRefused", "StartRefused", "register"]

log = logging.getLogger("bpm.jobs")
#: Seconds before a request that failed unexpectedly goes back to its queue.
REQUEUE_PAUSE = 5.0
#: The characters of an argument a log line shows.
LOGGED_MAX = 80


def _run(
    name: str,
    ids: dict[str, Any],
    fn: Callable[[], Done],
    settings: Settings,
    refusals: list[Exception] | None = None,
) -> Done:
    """Run one job and log its line; a refusal (or a message that cannot be a job) is also
    put in ``refusals``, for a task that reports it to a sender waiting on the result
    backend. A request that exists only in its message is never acknowledged unless it was
    carried out or refused: on any other failure it goes back to its queue."""
    started = time.perf_counter()
    try:
        with because(f"{name} {_fmt(ids)}".strip()):  # written into the history rows it makes
            done = until_available(fn, within=settings.outage_wait, what=f"job {name}")
    except (DatabaseUnavailable, RetryableDatabaseError) as exc:
        if name in MESSAGE_ONLY:  # acknowledging it would lose the request: back it goes
            log.warning("job=%s outcome=requeued reason=%s %s", name, exc, _fmt(ids))
            raise Reject(str(exc), requeue=True) from None  # the warning says it all
        done = Done("failed")
        log.warning(
            "job=%s outcome=failed reason=%s %s (the scans redo it once the database answers)",
            name,
            exc,
            _fmt(ids),
        )
    except PoisonMessage as exc:
        done = Done("dropped")
        if refusals is not None:
            refusals.append(exc)
        log.warning("job=%s outcome=dropped reason=%s args=%s", name, exc, _fmt(ids))
    except BpmError as exc:
        done = Done("refused")
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
        done = Done("failed")
        log.exception("job=%s outcome=failed %s (the scans will retry it)", name, _fmt(ids))
    ms, outcome = (time.perf_counter() - started) * 1000, done.outcome
    job_done(name, outcome, started)
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
    return done


def _found_nothing(outcome: str) -> bool:
    """``stalled_tokens=0 ready_tasks=0`` and the like: every count zero (how many batches
    a cleanup took says nothing of what it found)."""
    counts = dict(part.split("=", 1) for part in outcome.split() if "=" in part)
    counts.pop("batches", None)
    return bool(counts) and all(v in ("0", "False") for v in counts.values())


def _fmt(ids: dict[str, Any]) -> str:
    # A sender's key may be long (and refused for it): the line shows its start.
    return " ".join(f"{k}={shortened(str(v), LOGGED_MAX)}" for k, v in ids.items())


def register(app: Celery, settings: Settings) -> None:
    """Define a Celery task for every job of the table, on ``app``."""
    for spec in JOBS.values():
        _define(app, settings, spec)


def _define(app: Celery, settings: Settings, spec: JobSpec) -> None:
    """The Celery task of one job: the task's name is the job's; its result is kept only
    for a job that answers a sender, and only when a result backend is configured."""
    name = spec.name.value
    answers = spec.refusal is not None and settings.result_backend is not None

    def body(
        message_id: str | None, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> str | dict[str, Any]:
        refused: list[Exception] = []

        def go() -> Done:
            call = Call(
                engine_for(app, settings),
                spec.decode(args, kwargs),
                job_settings(settings),
                message_id,
            )
            return spec.run(call)

        started = time.perf_counter()
        done = _run(name, spec.logged(args, kwargs), go, settings, refused)
        if name in SCAN_JOBS and not _found_nothing(done.outcome):
            seconds = time.perf_counter() - started
            report_found_work(app, name, args, kwargs, done.outcome, seconds)
        if done.again:  # it left work behind: carry on in a fresh job
            app.tasks[name].apply_async(args, kwargs, queue=settings.route(name))
        if spec.refusal is None:
            return done.outcome
        if refused and answers:
            raise spec.refusal(str(refused[0]))
        return {"outcome": done.outcome, **done.answer}

    # Not shared: the task runs with this app's settings, so another app made in the same
    # process (a sender's, a test's) must not get it.
    options: dict[str, Any] = {"name": name, "ignore_result": not answers, "shared": False}
    if spec.refusal is not None:
        # A refusal is the sender's answer, not a fault: Celery logs it without a traceback.
        options["throws"] = (spec.refusal,)
    if name in SCAN_JOBS:  # monitors hear of a scan only when it found work (quiet_scans)
        options["send_events"] = False
    if spec.keyed_by_message:

        @app.task(bind=True, **options)
        def keyed(self: Any, *args: Any, **kwargs: Any) -> str | dict[str, Any]:
            # The last fallback of the job's idempotency key: a redelivered message keeps
            # its id.
            return body(f"celery:{self.request.id}", args, kwargs)

    else:

        @app.task(**options)
        def plain(*args: Any, **kwargs: Any) -> str | dict[str, Any]:
            return body(None, args, kwargs)
