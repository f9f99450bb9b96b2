"""Embedded mode: the same engine on SQLite, jobs run in-process (no server, no broker)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER, DroppingDispatcher, Job
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.handlers import HandlerRegistry
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.processes import fork_one_join, single_task
from tests.helpers.runtime import Calls, failing


def full_process() -> dict[str, Any]:
    """Fork and join, a subprocess, and a handler that succeeds on its second attempt."""
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .service_task("flaky", handler="flaky", retry={"max_attempts": 3, "backoff": "PT0.02S"})
        .end("s_end")
        .sequence("s_start", "flaky", "s_end")
    )
    return (
        ProcessBuilder("embedded")
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join")
        .sub_process("sub", body)
        .service_task("price", handler="price")
        .exclusive_gateway("gw", default="f_low")
        .task("high")
        .task("low")
        .end()
        .sequence("start", "fork", "sub", "join")
        .sequence("fork", "price", "join")
        .sequence("join", "gw")
        .flow("gw", "high", condition="${total > 100}", flow_id="f_high")
        .flow("gw", "low", flow_id="f_low")
        .sequence("high", "end")
        .sequence("low", "end")
        .build()
    )


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'bpm.db'}"


@pytest.fixture
def embedded(url: str, handlers: HandlerRegistry) -> Iterator[EmbeddedRuntime]:
    rt = EmbeddedRuntime(url, handlers=handlers)  # SQLite migrates itself
    try:
        yield rt
    finally:
        rt.close()


def test_a_process_with_fork_join_subprocess_and_retry_completes(
    embedded: EmbeddedRuntime, calls: Calls
) -> None:
    calls.add("flaky", failing(1))
    calls.add("price", lambda ctx: {"total": ctx.variables["qty"] * 60})
    embedded.engine.deploy(full_process())
    iid = embedded.engine.start("embedded", {"qty": 2}, business_key="E-1").id

    assert embedded.wait_for(iid, timeout=30) == "COMPLETED"
    assert_finished_cleanly(embedded.db, iid)
    assert [c.attempt for c in calls.seen["flaky"]] == [1, 2]

    shown = embedded.engine.show(iid)
    assert (shown["state"], shown["business_key"]) == ("COMPLETED", "E-1")
    assert shown["variables"] == {"qty": 2, "total": 120}
    assert {t["node_id"]: t["state"] for t in shown["tasks"]} == {"flaky": "DONE", "price": "DONE"}
    trace = embedded.engine.trace(iid)
    types = [e["type"] for e in trace]
    assert "JoinFired" in types and "SubprocessCompleted" in types
    assert types.count("InstanceCompleted") == 1
    assert any(e["type"] == "MOVED" and e["node_id"] == "high" for e in trace)
    assert embedded.engine.find_instances(state="COMPLETED")[0]["id"] == str(iid)


def test_failure_retry_and_cancel_on_sqlite(embedded: EmbeddedRuntime, calls: Calls) -> None:
    broken = {"yes": True}

    def work(ctx: Any) -> None:
        if broken["yes"]:
            raise RuntimeError("not yet")

    calls.add("work", work)
    embedded.engine.deploy(single_task())
    failed = embedded.engine.start("single").id
    assert embedded.wait_for(failed) == "FAILED"
    (incident,) = embedded.engine.incidents()
    assert "not yet" in incident["message"]

    broken["yes"] = False
    embedded.engine.retry(rows.tokens_of(embedded.db, failed)[0].id)
    assert embedded.wait_for(failed) == "COMPLETED"
    assert_finished_cleanly(embedded.db, failed)

    cancelled = embedded.engine.start("single").id
    embedded.engine.cancel(cancelled)
    embedded.run_until_idle()
    assert_finished_cleanly(embedded.db, cancelled, "CANCELLED")
    assert calls.count("work") == 2


def test_restart_and_recover_finish_an_instance_whose_jobs_were_dropped(
    url: str, handlers: HandlerRegistry, calls: Calls
) -> None:
    calls.add("branch")
    calls.add("after")
    clock = FakeClock()
    first = EmbeddedRuntime(url, handlers=handlers, clock=clock)
    crashed = Engine(first.db, DroppingDispatcher(), handlers=handlers, clock=clock)
    crashed.deploy(fork_one_join())
    stalled = crashed.start("fork3").id
    half = crashed.start("fork3").id
    root = rows.tokens_of(first.db, half)[0]
    crashed.advance(root.id, root.version)  # forks, runs one branch; the rest is lost
    assert rows.state(first.db, stalled) == rows.state(first.db, half) == "RUNNING"
    assert first.run_until_idle(timeout=1)  # nothing queued in this process: still stuck
    first.close()

    second = EmbeddedRuntime(url, handlers=handlers, clock=clock)  # the process restarts
    try:
        clock.advance(timedelta(minutes=5))
        found = second.recover()
        # stalled's root at its start event; half's two unstarted branches. Half's root,
        # whose first branch is parked at the join, is not re-sent: its join still needs the
        # other two, which nudge it when they arrive.
        assert (found["stalled_tokens"], found["waiting_parents"]) == (3, 0)
        for iid in (stalled, half):
            assert second.wait_for(iid, timeout=30) == "COMPLETED"
            assert_finished_cleanly(second.db, iid)
        assert (calls.count("branch"), calls.count("after")) == (6, 2)
    finally:
        second.close()


def test_a_poisoned_job_is_logged_and_dropped(
    embedded: EmbeddedRuntime, calls: Calls, caplog: pytest.LogCaptureFixture
) -> None:
    calls.add("work")
    embedded.engine.deploy(single_task())
    iid = embedded.engine.start("single").id
    embedded.dispatcher.dispatch(
        [
            Job(ADVANCE_TOKEN, {"token_id": "not-a-uuid", "expected_version": 0}),
            Job(RUN_HANDLER, {}),
            Job("bpm.no_such_job", {"x": 1}),
        ]
    )
    with caplog.at_level(logging.ERROR, logger="bpm.embedded"):
        assert embedded.wait_for(iid) == "COMPLETED"
        embedded.run_until_idle()
    assert len(caplog.records) == 3
    assert len(embedded.dispatcher) == 0
    assert_history_consistent(embedded.db, iid)


def test_second_runtime_on_the_same_file_sees_the_same_instances(
    url: str, handlers: HandlerRegistry, calls: Calls
) -> None:
    calls.add("work")
    first = EmbeddedRuntime(url, handlers=handlers)
    try:
        first.engine.deploy(single_task())
        iid = first.engine.start("single", business_key="B-1").id
        assert first.wait_for(iid) == "COMPLETED"
    finally:
        first.close()
    second = EmbeddedRuntime(url, handlers=handlers)  # migrating again is a no-op
    try:
        assert second.state(iid) == "COMPLETED"
        again = second.engine.start("single", business_key="B-1")
        assert again.id == iid and not again.created
        assert second.engine.deploy(single_task()).created is False
    finally:
        second.close()
