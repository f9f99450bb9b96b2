"""The Celery tasks: thin adapters that decode ids and call the engine (style b.1).

Each logs one line per job with its name, ids, outcome (done / stale no-op / deferred /
dropped / failed) and duration. A job never raises into Celery: an unexpected error is logged
and the scans redo the work, so no message loops and no queue blocks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery import Celery

from bpm.engine import retention, scans, timers
from bpm.engine.engine import because
from bpm.errors import BpmError
from workers.config import Settings
from workers.jobs import PoisonMessage, as_optional_str, as_uuid, as_version, bind
from workers.runtime import engine_for, scan_config

log = logging.getLogger("bpm.jobs")


class CorrelationRefused(Exception):
    """Raised to a sender that waits for the result of a correlation that was refused."""


def _run(name: str, ids: dict[str, Any], fn: Callable[[], str]) -> str:
    started = time.perf_counter()
    try:
        with because(f"{name} {_fmt(ids)}".strip()):  # written into the history rows it makes
            outcome = fn()
    except PoisonMessage as exc:
        outcome = "dropped"
        log.warning("job=%s outcome=dropped reason=%s args=%s", name, exc, ids)
    except BpmError as exc:
        outcome = "refused"
        log.warning("job=%s outcome=refused reason=%s %s", name, exc, _fmt(ids))
    except Exception:
        outcome = "failed"
        log.exception("job=%s outcome=failed %s (the scans will retry it)", name, _fmt(ids))
    ms = (time.perf_counter() - started) * 1000
    log.info("job=%s %s outcome=%s ms=%.1f", name, _fmt(ids), outcome, ms,
             extra={"action": name, "outcome": outcome, "duration_ms": ms, **ids})
    return outcome


def _fmt(ids: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in ids.items())


def register(app: Celery, settings: Settings) -> None:
    """Define the tasks of the runtime contract on ``app``."""

    @app.task(name="bpm.advance_token", ignore_result=True)
    def advance_token(*args: Any, **kwargs: Any) -> str:
        def go() -> str:
            a = bind(("token_id", "expected_version"), args, kwargs, 2)
            token_id, version = as_uuid(a["token_id"], "token_id"), as_version(
                a["expected_version"])
            return engine_for(app, settings).advance(token_id, version)

        return _run("bpm.advance_token", {"token_id": kwargs.get("token_id", args[:1])}, go)

    @app.task(name="bpm.run_handler", ignore_result=True)
    def run_handler(*args: Any, **kwargs: Any) -> str:
        def go() -> str:
            a = bind(("task_id",), args, kwargs, 1)
            return engine_for(app, settings).run_handler(as_uuid(a["task_id"], "task_id"))

        return _run("bpm.run_handler", {"task_id": kwargs.get("task_id", args[:1])}, go)

    @app.task(name="bpm.start_instance", bind=True, ignore_result=True)
    def start_instance(self: Any, *args: Any, **kwargs: Any) -> str:
        def go() -> str:
            a = bind(("process_key", "variables", "business_key", "idempotency_key"), args,
                     kwargs, 1)
            key = as_optional_str(a["process_key"], "process_key")
            assert key is not None
            started = engine_for(app, settings).start(
                key, a.get("variables"),
                business_key=as_optional_str(a.get("business_key"), "business_key"),
                # A redelivered message has the same task id: it starts nothing new.
                idempotency_key=as_optional_str(a.get("idempotency_key"), "idempotency_key")
                or f"celery:{self.request.id}",
                run_now=True)  # this job goes on with the instance: one broker hop less
            return f"started {started.id}" if started.created else f"existing {started.id}"

        return _run("bpm.start_instance", {"process_key": kwargs.get("process_key")}, go)

    @app.task(name="bpm.scan_stalled", ignore_result=True)
    def scan_stalled() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            now, cfg = engine.clock.now(), scan_config(settings)
            found = {"stalled_tokens": scans.scan_stalled_tokens(engine, now, cfg),
                     "ready_tasks": scans.scan_ready_tasks(engine, now, cfg),
                     "waiting_parents": scans.scan_waiting_parents(engine, now, cfg)}
            return " ".join(f"{k}={v}" for k, v in found.items())

        return _run("bpm.scan_stalled", {}, go)

    @app.task(name="bpm.run_compensation", ignore_result=True)
    def run_compensation(*args: Any, **kwargs: Any) -> str:
        def go() -> str:
            a = bind(("token_id", "expected_version"), args, kwargs, 2)
            token_id = as_uuid(a["token_id"], "token_id")
            version = as_version(a["expected_version"])
            return engine_for(app, settings).run_compensation(token_id, version)

        return _run("bpm.run_compensation", {"token_id": kwargs.get("token_id", args[:1])}, go)

    @app.task(name="bpm.scan_timers", ignore_result=True)
    def scan_timers() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            fired = timers.scan_timers(engine, engine.clock.now())
            late = max((f.lateness.total_seconds() * 1000 for f in fired), default=0.0)
            return f"fired={len(fired)} lateness_max_ms={late:.0f}"

        return _run("bpm.scan_timers", {}, go)

    @app.task(name="bpm.correlate_message", ignore_result=settings.result_backend is None)
    def correlate_message(*args: Any, **kwargs: Any) -> dict[str, Any]:
        """Deliver a message; with BPM_RESULT_BACKEND set, a sender's ``result.get()`` sees
        a correlation that matched nothing as an error."""
        refused: list[BpmError] = []

        def go() -> str:
            a = bind(("message", "business_key", "instance_id", "variables", "all"), args,
                     kwargs, 1)
            message = as_optional_str(a["message"], "message")
            assert message is not None
            instance = a.get("instance_id")
            try:
                woken = engine_for(app, settings).correlate(
                    message, business_key=as_optional_str(a.get("business_key"), "business_key"),
                    instance_id=as_uuid(instance, "instance_id") if instance else None,
                    variables=a.get("variables"), all_waiting=bool(a.get("all", False)))
            except BpmError as exc:
                refused.append(exc)
                raise
            return "correlated " + ",".join(str(t) for t in woken)

        outcome = _run("bpm.correlate_message", {"message": kwargs.get("message", args[:1])}, go)
        if refused and settings.result_backend is not None:
            raise CorrelationRefused(str(refused[0]))
        return {"outcome": outcome}

    @app.task(name="bpm.scan_locks", ignore_result=True)
    def scan_locks() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            n = scans.scan_expired_locks(engine, engine.clock.now(),
                                                 scan_config(settings))
            return f"expired_locks={n}"

        return _run("bpm.scan_locks", {}, go)

    @app.task(name="bpm.cleanup_history", ignore_result=True)
    def cleanup_history() -> str:
        def go() -> str:
            engine = engine_for(app, settings)
            swept = retention.sweep(engine, engine.clock.now(), default_ttl=settings.history_ttl)
            if swept.more and swept.deleted:  # a backlog: carry on in a fresh job
                cleanup_history.apply_async(queue=settings.route("bpm.cleanup_history"))
            return f"deleted={swept.deleted} batches={swept.batches} more={swept.more}"

        return _run("bpm.cleanup_history", {}, go)
