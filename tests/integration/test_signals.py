"""Signal events (Camunda 7 semantics): a signal is a broadcast to every subscription of every
instance that exists when it is thrown, never to one made later (an instance the signal
itself starts included); catches, boundaries (interrupting or not), start events, event
subprocesses and events after an event-based gateway; thrown through the API or by a throw
or end event; delivered in batches, each recipient once however often the job runs."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher, Job, JobName
from bpm.engine.operations import signal_deliveries
from bpm.errors import InvalidOperation
from bpm.states import InstanceState
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import EngineFactory, Harness


def catcher(key: str = "catcher", signal: str = "go") -> dict[str, Any]:
    return (
        ProcessBuilder(key)
        .start()
        .signal_event("wait", signal=signal)
        .end()
        .sequence("start", "wait", "end")
        .build()
    )


def user_task_with_boundary(*, interrupting: bool) -> dict[str, Any]:
    return (
        ProcessBuilder("guarded")
        .start()
        .user_task("work")
        .signal_boundary("stop", attached_to="work", signal="stop", interrupting=interrupting)
        .task("stopped")
        .end("stopped_end")
        .end()
        .sequence("start", "work", "end")
        .sequence("stop", "stopped", "stopped_end")
        .build()
    )


def visited(db: Database, iid: Any, node: str) -> bool:
    return any(e["node_id"] == node for e in rows.token_events_of(db, iid))


def test_a_thrown_signal_reaches_every_waiting_instance(rt: Harness, pg_db: Database) -> None:
    first = rt.run(catcher(), {"n": 1})
    second = rt.run(catcher(), {"n": 2})
    thrown = rt.engine.throw_signal("go", {"colour": "red"})
    assert thrown.recipients == 2
    later = rt.run(catcher())  # made after the throw: it waits on
    rt.drain()
    for iid in (first, second):
        assert rows.state(pg_db, iid) == InstanceState.COMPLETED
        assert rt.engine.show(iid)["variables"]["colour"] == "red"
        assert_finished_cleanly(pg_db, iid)
        assert_history_consistent(pg_db, iid)
    assert rows.state(pg_db, later) == InstanceState.RUNNING
    assert [t.node_id for t in rows.live_tokens(pg_db, later)] == ["wait"]
    assert_history_consistent(pg_db, later)  # replay rebuilds a token waiting for a signal


def test_a_signal_of_another_name_reaches_nothing(rt: Harness, pg_db: Database) -> None:
    iid = rt.run(catcher())
    assert rt.engine.throw_signal("stay").recipients == 0
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.RUNNING


def test_an_interrupting_signal_boundary_leaves_the_activity(rt: Harness, pg_db: Database) -> None:
    iid = rt.run(user_task_with_boundary(interrupting=True))
    rt.engine.throw_signal("stop")
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert visited(pg_db, iid, "stopped") and not visited(pg_db, iid, "end")
    assert rt.engine.user_tasks(instance_id=iid) == []
    assert_finished_cleanly(pg_db, iid)


def test_a_non_interrupting_signal_boundary_starts_a_path_each_time(
    rt: Harness, pg_db: Database
) -> None:
    iid = rt.run(user_task_with_boundary(interrupting=False))
    rt.engine.throw_signal("stop")
    rt.drain()
    rt.engine.throw_signal("stop")
    rt.drain()
    ended = rows.token_events_of(pg_db, iid, node_id="stopped_end", type="COMPLETED")
    assert len(ended) == 2
    assert rows.state(pg_db, iid) == InstanceState.RUNNING
    rt.complete_user_task(iid)
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert_history_consistent(pg_db, iid)


def test_a_signal_boundary_on_a_subprocess_and_a_multi_instance_body(
    rt: Harness, pg_db: Database
) -> None:
    inner = ProcessBuilder("inner").start("s").user_task("t").end("e").sequence("s", "t", "e")
    doc = (
        ProcessBuilder("nested")
        .start()
        .sub_process("sub", inner)
        .signal_boundary("stop", attached_to="sub", signal="stop")
        .user_task("many")
        .multi_instance("many", cardinality=3)
        .signal_boundary("stop_many", attached_to="many", signal="stop")
        .end("stopped")
        .end()
        .sequence("start", "sub", "many", "end")
        .sequence("stop", "many")
        .sequence("stop_many", "stopped")
        .build()
    )
    iid = rt.run(doc)
    rt.engine.throw_signal("stop")
    rt.drain()
    assert len(rt.engine.user_tasks(instance_id=iid)) == 3  # at the body now: the next signal
    rt.engine.throw_signal("stop")
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert visited(pg_db, iid, "stopped") and not visited(pg_db, iid, "end")
    assert_finished_cleanly(pg_db, iid)


def test_a_signal_start_event_starts_the_latest_version_once(rt: Harness, pg_db: Database) -> None:
    def started(version: str) -> dict[str, Any]:
        return (
            ProcessBuilder("on_signal")
            .signal_start(signal="go")
            .task(version)
            .signal_event("again", signal="go")  # the signal that started it is not for it
            .end()
            .sequence("start", version, "again", "end")
            .build()
        )

    rt.deploy(started("v1"))
    rt.deploy(started("v2"))
    thrown = rt.engine.throw_signal("go", {"who": "api"})
    assert thrown.recipients == 1
    rt.drain()
    [iid] = [i["id"] for i in rt.engine.find_instances(key="on_signal")]
    assert visited(pg_db, iid, "v2") and not visited(pg_db, iid, "v1")
    assert rt.engine.show(iid)["variables"]["who"] == "api"
    assert [t.node_id for t in rows.live_tokens(pg_db, iid)] == ["again"]
    rt.engine.throw_signal("go")  # the next one: it moves on, and starts another
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert len(rt.engine.find_instances(key="on_signal")) == 2


@pytest.mark.parametrize("interrupting", [True, False])
def test_a_signal_starts_an_event_subprocess(
    rt: Harness, pg_db: Database, interrupting: bool
) -> None:
    handler = (
        ProcessBuilder("h")
        .trigger_start("hs", signal="alarm", interrupting=interrupting)
        .task("handled")
        .end("he")
        .sequence("hs", "handled", "he")
    )
    inner = (
        ProcessBuilder("inner")
        .start("s")
        .user_task("t")
        .end("e")
        .event_sub_process("inner_alarm", handler_copy(handler, "i"))
        .sequence("s", "t", "e")
    )
    doc = (
        ProcessBuilder("guarded")
        .start()
        .sub_process("sub", inner)
        .end()
        .event_sub_process("alarm", handler)
        .sequence("start", "sub", "end")
        .build()
    )
    iid = rt.run(doc)
    rt.engine.throw_signal("alarm")
    rt.drain()
    assert visited(pg_db, iid, "handled")
    if interrupting:  # the process's own takes it all (the inner one may come first or never)
        assert rows.state(pg_db, iid) == InstanceState.COMPLETED
        assert_finished_cleanly(pg_db, iid)
    else:
        assert visited(pg_db, iid, "ihandled")
        assert rows.state(pg_db, iid) == InstanceState.RUNNING
        rt.complete_user_task(iid)
        assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert_history_consistent(pg_db, iid)


def handler_copy(handler: ProcessBuilder, prefix: str) -> ProcessBuilder:
    """The same event subprocess body with its ids prefixed (ids are unique per document)."""
    doc = handler.build()
    body = ProcessBuilder(prefix + doc["key"])
    for node in doc["nodes"]:
        keys = {k: v for k, v in node.items() if k not in ("id", "type")}
        body._node(prefix + node["id"], node["type"], **keys)
    for flow in doc["flows"]:
        body.sequence(prefix + flow["source"], prefix + flow["target"])
    return body


def test_a_signal_after_an_event_based_gateway_wins(rt: Harness, pg_db: Database) -> None:
    doc = (
        ProcessBuilder("choose")
        .start()
        ._node("gw", "eventBasedGateway")
        .signal_event("sig", signal="go")
        .timer("late", duration="PT1H")
        .end("by_signal")
        .end("by_timer")
        .sequence("start", "gw", "sig", "by_signal")
        .sequence("gw", "late", "by_timer")
        .build()
    )
    iid = rt.run(doc)
    assert rt.engine.throw_signal("go").recipients == 1
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert visited(pg_db, iid, "by_signal") and not visited(pg_db, iid, "by_timer")
    assert_finished_cleanly(pg_db, iid)


def test_a_throw_event_and_an_end_event_broadcast(rt: Harness, pg_db: Database) -> None:
    waiting = rt.run(catcher(signal="first"))
    also = rt.run(catcher("other", signal="second"))
    doc = (
        ProcessBuilder("thrower")
        .start()
        .signal_throw("throw", signal="first")
        .signal_throw("end", signal="second", end=True)
        .sequence("start", "throw", "end")
        .build()
    )
    thrower = rt.run(doc)
    assert rows.state(pg_db, thrower) == InstanceState.COMPLETED
    for iid in (waiting, also):
        assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    thrown = [e for e in rows.engine_events_of(pg_db, thrower) if e["type"] == "SignalThrown"]
    assert [e["data"]["signal"] for e in thrown] == ["first", "second"]
    assert_history_consistent(pg_db, thrower)


def test_deliveries_go_in_batches_and_a_duplicate_job_does_nothing_twice(
    rt: Harness, pg_db: Database
) -> None:
    ids = [rt.run(catcher()) for _ in range(7)]
    thrown = rt.engine.throw_signal("go")
    rt.queue.pop(rt.clock.peek())  # the delivery job: run by hand, in batches of 3
    core = rt.engine.core
    first = signal_deliveries.deliver(core, thrown.signal_id, 3)
    assert (first.delivered, first.more) == (3, True)
    job = Job(JobName.DELIVER_SIGNAL, {"signal_id": str(thrown.signal_id)})
    rt.queue.dispatch([job, job, job])  # sent three times
    rt.drain()
    for iid in ids:
        assert rows.state(pg_db, iid) == InstanceState.COMPLETED
        received = [e for e in rows.engine_events_of(pg_db, iid) if e["type"] == "SignalReceived"]
        assert len(received) == 1
    again = signal_deliveries.deliver(core, thrown.signal_id, 3)
    assert (again.delivered, again.more) == (0, False)


def test_a_token_that_moved_since_the_throw_is_skipped(rt: Harness, pg_db: Database) -> None:
    iid = rt.run(user_task_with_boundary(interrupting=True))
    thrown = rt.engine.throw_signal("stop")
    rt.queue.pop(rt.clock.peek())  # the delivery is late: the task completes first
    rt.complete_user_task(iid)
    done = signal_deliveries.deliver(rt.engine.core, thrown.signal_id)
    assert (done.delivered, done.skipped) == (0, 1)
    assert not visited(pg_db, iid, "stopped")


def test_a_throw_request_with_the_same_key_throws_once(rt: Harness, pg_db: Database) -> None:
    iid = rt.run(catcher())
    first = rt.engine.throw_signal("go", throw_key="req-1")
    second = rt.engine.throw_signal("go", throw_key="req-1")
    assert first.signal_id == second.signal_id and not second.created
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert len(rows.engine_events_of(pg_db, None, type="SignalThrown")) == 1


def test_a_bad_signal_name_is_refused(rt: Harness) -> None:
    with pytest.raises(InvalidOperation):
        rt.engine.throw_signal(" padded ")


def test_a_lost_delivery_job_is_sent_again_by_the_scan(rt: Harness, pg_db: Database) -> None:
    iid = rt.run(catcher())
    rt.engine.throw_signal("go")
    assert [j.name for j in rt.queued()] == [JobName.DELIVER_SIGNAL]
    rt.queue.pop(rt.clock.peek())  # the broker lost it
    assert rt.engine.run_scans()["unfinished_signals"] == 0  # within the grace period
    rt.clock.advance(timedelta(seconds=31))
    assert rt.engine.run_scans()["unfinished_signals"] == 1
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert rt.engine.run_scans()["unfinished_signals"] == 0
    assert_history_consistent(pg_db, iid)


def test_a_throw_name_with_an_expression_is_evaluated_over_the_thrower(
    rt: Harness, pg_db: Database
) -> None:
    europe = rt.run(catcher("eu", signal="alarm-eu"))
    america = rt.run(catcher("us", signal="alarm-us"))
    doc = (
        ProcessBuilder("regional")
        .start()
        .signal_throw("throw", signal="alarm-${region}")
        .end()
        .sequence("start", "throw", "end")
        .build()
    )
    thrower = rt.run(doc, {"region": "eu"})
    assert rows.state(pg_db, thrower) == InstanceState.COMPLETED
    assert rows.state(pg_db, europe) == InstanceState.COMPLETED
    assert rows.state(pg_db, america) == InstanceState.RUNNING
    failed = rt.run(doc)  # no region: an incident at the throw, nothing thrown
    [incident] = rows.incidents_of(pg_db, failed, only_open=True)
    assert incident.kind == "signal" and "region" in incident.message
    assert rows.state(pg_db, america) == InstanceState.RUNNING
    rt.engine.set_variables(failed, {"region": "us"})
    assert incident.token_id is not None
    rt.engine.retry(incident.token_id)
    rt.drain()
    assert rows.state(pg_db, america) == InstanceState.COMPLETED
    assert rows.state(pg_db, failed) == InstanceState.COMPLETED


TWICE = {"expression": "${n * 2}", "target": "twice"}


def test_a_throw_passes_its_in_variables_to_what_it_reaches(rt: Harness, pg_db: Database) -> None:
    waiting = rt.run(catcher())
    rt.deploy(
        ProcessBuilder("receiver")
        .signal_start(signal="go")
        .user_task("look")
        .end()
        .sequence("start", "look", "end")
        .build()
    )
    doc = (
        ProcessBuilder("sender")
        .start()
        ._node(
            "throw",
            "signalThrow",
            signal="go",
            **{
                "in": [
                    {"source": "order", "target": "order_id"},
                    {"expression": "${n * 2}", "target": "twice"},
                ]
            },
        )
        .end()
        .sequence("start", "throw", "end")
        .build()
    )
    rt.run(doc, {"order": "A-1", "n": 4, "secret": 1})
    assert rt.engine.show(waiting)["variables"] == {"order_id": "A-1", "twice": 8}
    [started] = [i["id"] for i in rt.engine.find_instances(key="receiver")]
    assert rt.engine.show(started)["variables"] == {"order_id": "A-1", "twice": 8}


def test_a_signal_boundary_on_a_call_activity_cancels_the_called_instance(
    rt: Harness, pg_db: Database
) -> None:
    rt.deploy(
        ProcessBuilder("callee")
        .start()
        .user_task("inside")
        .end()
        .sequence("start", "inside", "end")
        .build()
    )
    doc = (
        ProcessBuilder("caller")
        .start()
        .call_activity("call", process="callee")
        .signal_boundary("stop", attached_to="call", signal="stop")
        .end("stopped")
        .end()
        .sequence("start", "call", "end")
        .sequence("stop", "stopped")
        .build()
    )
    caller = rt.run(doc)
    [callee] = [i["id"] for i in rt.engine.find_instances(key="callee")]
    assert rt.engine.throw_signal("stop").recipients == 1
    rt.drain()
    assert_finished_cleanly(pg_db, caller)
    assert visited(pg_db, caller, "stopped")
    assert rows.state(pg_db, callee) == InstanceState.CANCELLED


def test_event_subscriptions_list_every_signal_wait(rt: Harness) -> None:
    handler = ProcessBuilder("h").trigger_start("hs", signal="alarm").end("he").sequence("hs", "he")
    doc = (
        ProcessBuilder("listens")
        .start()
        .parallel_gateway("fork")
        .user_task("work")
        .signal_boundary("stop", attached_to="work", signal="stop", interrupting=False)
        ._node("gw", "eventBasedGateway")
        .signal_event("sig", signal="go")
        .timer("late", duration="PT1H")
        .end("a")
        .end("b")
        .end("c")
        .end("d")
        .event_sub_process("esp", handler)
        .sequence("start", "fork")
        .sequence("fork", "work", "a")
        .sequence("fork", "gw", "sig", "b")
        .sequence("gw", "late", "c")
        .sequence("stop", "d")
        .build()
    )
    iid = rt.run(doc)
    found = {
        (s["event_type"], s["event_name"], s["node_id"]) for s in rt.engine.event_subscriptions(iid)
    }
    assert found == {
        ("signal", "stop", "stop"),
        ("signal", "go", "sig"),
        ("signal", "alarm", "hs"),
    }
    shown = rt.engine.show(iid)["subscriptions"]
    assert {s.get("signal") for s in shown} == {"stop", "go", "alarm"}


def test_two_delivery_runs_at_once_deliver_each_recipient_once(
    rt: Harness, pg_db: Database, engine_factory: EngineFactory
) -> None:
    """Two workers' batches race on PostgreSQL: SKIP LOCKED hands each row to one of them."""
    ids = [rt.run(catcher()) for _ in range(40)]
    thrown = rt.engine.throw_signal("go")
    rt.queue.pop(rt.clock.peek())
    runners = [engine_factory(InProcessDispatcher()) for _ in range(2)]
    done: list[int] = []

    def run(runner: Harness) -> None:
        while True:
            batch = signal_deliveries.deliver(runner.engine.core, thrown.signal_id, 3)
            done.append(batch.delivered)
            if not batch.more:
                return

    threads = [threading.Thread(target=run, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sum(done) == 40
    for runner in runners:  # what the deliveries moved on runs on
        runner.drain()
    for iid in ids:
        assert rows.state(pg_db, iid) == InstanceState.COMPLETED
        assert len(rows.engine_events_of(pg_db, iid, type="SignalReceived")) == 1
