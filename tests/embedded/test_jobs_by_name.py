"""Embedded mode runs every job of the table by name, decoded and run as a worker runs it:
one scenario per job, each doing the work the job exists for."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import DroppingDispatcher, Job, JobName
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.engine.jobs.table import JOBS
from bpm.engine.operations import retention
from bpm.engine.operations.external import TopicRequest
from bpm.errors import NoMatchingWait
from bpm.handlers import HandlerContext, HandlerRegistry
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import Calls

WAITS = (
    ProcessBuilder("waits", history_ttl="PT0S")
    .start()
    .timer("pause", duration="PT1M")
    .receive_task("await", message="go")
    .service_task("work", handler="work")
    .end()
    .sequence("start", "pause", "await", "work", "end")
    .build()
)
WORK = (
    ProcessBuilder("work", history_ttl="PT0S")
    .start()
    .service_task("work", handler="work")
    .end()
    .sequence("start", "work", "end")
    .build()
)
EXTERNAL = (
    ProcessBuilder("external")
    .start()
    .service_task("remote", topic="remote", retry={"max_attempts": 2, "backoff": "PT0S"})
    .end()
    .sequence("start", "remote", "end")
    .build()
)


@dataclass
class Kit:
    rt: EmbeddedRuntime
    clock: FakeClock
    calls: Calls

    @property
    def engine(self) -> Engine:
        return self.rt.engine

    def run(self, name: JobName, **args: object) -> str:
        return self.engine.run_job(Job(name, dict(args)))

    def drain(self) -> list[str]:
        """Run every queued job by name; the names that ran."""
        ran = []
        while (job := self.rt.dispatcher.pop(self.clock.now())) is not None:
            self.engine.run_job(job)
            ran.append(job.name)
        return ran


@pytest.fixture
def kit(tmp_path: Path, handlers: HandlerRegistry, clock: FakeClock) -> Iterator[Kit]:
    rt = EmbeddedRuntime(f"sqlite:///{tmp_path / 'bpm.db'}", handlers=handlers, clock=clock)
    calls = Calls(handlers)
    calls.add("work")
    for doc in (WAITS, WORK, EXTERNAL):
        rt.engine.deploy(doc)
    try:
        yield Kit(rt, clock, calls)
    finally:
        rt.close()


def _started(outcome: str) -> UUID:
    made, iid = outcome.split()
    assert made == "started", outcome
    return UUID(iid)


def start_instance(kit: Kit) -> None:
    sent = {"process_key": "waits", "business_key": "J-1", "variables": {"pin": "4711"}}
    iid = _started(kit.run(JobName.START_INSTANCE, **sent))
    causes = {e["cause"] for e in kit.engine.trace(iid)}
    assert "bpm.start_instance process_key=waits business_key=J-1" in causes
    assert not any("4711" in c for c in causes)  # variables never go into a cause
    # It went on with the instance in the same job, up to the timer.
    assert [t.node_id for t in rows.tokens_of(kit.rt.db, iid) if t.state == "WAITING"] == ["pause"]
    again = kit.run(JobName.START_INSTANCE, process_key="waits", business_key="J-1")
    assert again == f"existing {iid}"


def scan_timers(kit: Kit) -> None:
    iid = _started(kit.run(JobName.START_INSTANCE, process_key="waits"))
    assert kit.run(JobName.SCAN_TIMERS) == "fired=0 lateness_max_ms=0"
    kit.clock.advance(timedelta(minutes=1))
    assert kit.run(JobName.SCAN_TIMERS).startswith("fired=1 lateness_max_ms=")
    kit.drain()
    assert any(
        t.node_id == "await" and t.state == "WAITING" for t in rows.tokens_of(kit.rt.db, iid)
    )


def correlate_message(kit: Kit) -> None:
    iid = _started(kit.run(JobName.START_INSTANCE, process_key="waits", business_key="J-2"))
    kit.clock.advance(timedelta(minutes=1))
    kit.run(JobName.SCAN_TIMERS)
    kit.drain()
    assert kit.run(JobName.CORRELATE_MESSAGE, message="go", business_key="J-2").startswith(
        "correlated "
    )
    kit.drain()
    assert kit.rt.state(iid) == "COMPLETED"
    with pytest.raises(NoMatchingWait):
        kit.run(JobName.CORRELATE_MESSAGE, message="go", business_key="J-2")


def advance_token(kit: Kit) -> None:
    iid = kit.engine.start("work").id  # its first step is queued, not run
    job = kit.rt.dispatcher.pop(kit.clock.now())
    assert job is not None and job.name == JobName.ADVANCE_TOKEN
    assert kit.engine.run_job(job) == "done"
    assert kit.engine.run_job(job) == "stale"  # delivered twice: a no-op
    kit.drain()
    assert kit.rt.state(iid) == "COMPLETED"


def run_handler(kit: Kit) -> None:
    rt, handlers = kit.rt, kit.engine.handlers
    engine = Engine(
        rt.db, rt.dispatcher, handlers=handlers, clock=kit.clock, run_handlers_inline=False
    )
    iid = engine.start("work").id
    token_job = kit.rt.dispatcher.pop(kit.clock.now())
    assert token_job is not None
    engine.run_job(token_job)  # makes the task and queues its handler run
    job = kit.rt.dispatcher.pop(kit.clock.now())
    assert job is not None and job.name == JobName.RUN_HANDLER
    assert engine.run_job(job) == "done"
    assert kit.calls.count("work") == 1
    assert kit.rt.state(iid) == "COMPLETED"


def run_compensation(kit: Kit) -> None:
    def ship(ctx: HandlerContext) -> None:
        raise RuntimeError("the parcel was lost")

    kit.calls.add("reserve")
    kit.calls.add("release")
    kit.engine.handlers.register("ship", ship)
    b = ProcessBuilder("saga", saga="global").start()
    b._node("reserve", "serviceTask", handler="reserve", compensation={"handler": "release"})
    b._node("ship", "serviceTask", handler="ship")
    kit.engine.deploy(b.end().sequence("start", "reserve", "ship", "end").build())
    iid = kit.engine.start("saga").id
    assert JobName.RUN_COMPENSATION in kit.drain()
    assert kit.calls.count("release") == 1
    assert kit.rt.state(iid) == "TERMINATED"


def scan_locks(kit: Kit) -> None:
    kit.engine.start("external")
    kit.drain()
    (locked,) = kit.engine.fetch_and_lock("w1", [TopicRequest("remote", timedelta(seconds=10))])
    assert kit.run(JobName.SCAN_LOCKS) == "expired_locks=0"
    kit.clock.advance(timedelta(seconds=11))
    assert kit.run(JobName.SCAN_LOCKS) == "expired_locks=1"
    assert rows.task(kit.rt.db, locked.id).state == "READY"  # offered again: one attempt left


def scan_stalled(kit: Kit) -> None:
    lost = Engine(kit.rt.db, DroppingDispatcher(), clock=kit.clock)
    iid = lost.start("work").id  # its first job is lost
    none = "ready_tasks=0 waiting_parents=0 unfinished_signals=0"
    assert kit.run(JobName.SCAN_STALLED) == f"stalled_tokens=0 {none}"
    kit.clock.advance(timedelta(seconds=31))
    assert kit.run(JobName.SCAN_STALLED) == f"stalled_tokens=1 {none}"
    assert kit.drain() == [JobName.ADVANCE_TOKEN]
    assert kit.rt.state(iid) == "COMPLETED"


def cleanup_history(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    ended = [kit.engine.start("work").id for _ in range(2)]
    kit.drain()
    kit.clock.advance(timedelta(seconds=1))
    monkeypatch.setattr(
        retention, "sweep", functools.partial(retention.sweep, batch=1, max_batches=1)
    )
    # A sweep that used its whole budget sends itself again, through the engine's dispatcher.
    assert kit.run(JobName.CLEANUP_HISTORY) == "deleted=1 batches=1 more=True"
    assert set(kit.drain()) == {JobName.CLEANUP_HISTORY}  # until one finds nothing
    assert [kit.rt.state(i) for i in ended] == ["UNKNOWN", "UNKNOWN"]


SIGNALLED = (
    ProcessBuilder("signalled")
    .start()
    .signal_event("wait", signal="alarm")
    .end()
    .sequence("start", "wait", "end")
    .build()
)


def throw_signal(kit: Kit) -> None:
    kit.engine.deploy(SIGNALLED)
    waiting = [kit.engine.start("signalled").id for _ in range(2)]
    kit.drain()
    sent = {"name": "alarm", "variables": {"n": 1}, "throw_key": "k-1"}
    outcome = kit.engine.run_job(Job(JobName.THROW_SIGNAL, sent))
    assert outcome.startswith("thrown ") and outcome.endswith("recipients=2")
    again = kit.engine.run_job(Job(JobName.THROW_SIGNAL, {"name": "alarm", "throw_key": "k-1"}))
    assert again.startswith("existing ")  # the same request: thrown once
    assert kit.drain() == [JobName.DELIVER_SIGNAL, JobName.ADVANCE_TOKEN, JobName.ADVANCE_TOKEN]
    assert [kit.rt.state(i) for i in waiting] == ["COMPLETED", "COMPLETED"]
    assert kit.engine.show(waiting[0])["variables"] == {"n": 1}


def deliver_signal(kit: Kit) -> None:
    kit.engine.deploy(SIGNALLED)
    waiting = [kit.engine.start("signalled").id for _ in range(3)]
    kit.drain()
    thrown = kit.engine.throw_signal("alarm")
    job = kit.rt.dispatcher.pop(kit.clock.now())
    assert job is not None and job.name == JobName.DELIVER_SIGNAL
    assert kit.engine.run_job(job) == "delivered=3 skipped=0 more=False"
    assert kit.engine.run_job(job) == "delivered=0 skipped=0 more=False"  # twice: a no-op
    kit.drain()
    assert [kit.rt.state(i) for i in waiting] == ["COMPLETED"] * 3
    assert thrown.recipients == 3


SCENARIOS: dict[JobName, Callable[..., None]] = {
    JobName.THROW_SIGNAL: throw_signal,
    JobName.DELIVER_SIGNAL: deliver_signal,
    JobName.START_INSTANCE: start_instance,
    JobName.SCAN_TIMERS: scan_timers,
    JobName.CORRELATE_MESSAGE: correlate_message,
    JobName.ADVANCE_TOKEN: advance_token,
    JobName.RUN_HANDLER: run_handler,
    JobName.RUN_COMPENSATION: run_compensation,
    JobName.SCAN_LOCKS: scan_locks,
    JobName.SCAN_STALLED: scan_stalled,
    JobName.CLEANUP_HISTORY: cleanup_history,
}


def test_every_job_of_the_table_has_a_scenario() -> None:
    assert set(SCENARIOS) == set(JOBS)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_embedded_engine_runs_the_job_by_name(
    name: JobName, kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = SCENARIOS[name]
    if scenario is cleanup_history:
        scenario(kit, monkeypatch)
    else:
        scenario(kit)


def test_a_job_name_not_in_the_table_is_refused_with_the_names_there_are(kit: Kit) -> None:
    with pytest.raises(ValueError, match=r"unknown job 'bpm\.nope': the jobs are bpm\."):
        kit.engine.run_job(Job("bpm.nope", {}))
