"""Event subprocesses (Camunda 7 semantics): started by an error, a message or a timer while
their scope (the process, or an embedded subprocess) runs; interrupting ones cancel the
scope's other work and end the scope when they end, non-interrupting ones run beside it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import timedelta
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder, compile_definition
from bpm.engine.operations import replay
from bpm.errors import BpmnError, InvalidDefinition, NoMatchingWait
from bpm.handlers import HandlerContext
from bpm.store import Database, timers
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.race import run_together
from tests.helpers.runtime import Calls, EngineFactory, Harness


def raising(code: str) -> Any:
    def run(ctx: HandlerContext) -> None:
        raise BpmnError(code, "declined by the bank")

    return run


def handled(trigger: dict[str, Any], body: str = "on_event", esp: str = "esp") -> ProcessBuilder:
    """An event subprocess: its trigger start, one service task, an end."""
    return (
        ProcessBuilder(esp)
        .trigger_start(f"{esp}_start", **trigger)
        .service_task(body, handler="work")
        .end(f"{esp}_end")
        .sequence(f"{esp}_start", body, f"{esp}_end")
    )


def process_with(*esps: tuple[str, ProcessBuilder], main: str = "charge") -> dict[str, Any]:
    builder = (
        ProcessBuilder("esp_process")
        .start()
        .service_task(main, handler="charge")
        .service_task("after", handler="work")
        .end()
        .sequence("start", main, "after", "end")
    )
    for esp_id, body in esps:
        builder.event_sub_process(esp_id, body)
    return builder.build()


def worked(calls: Calls) -> list[str]:
    return [c.node_id for c in calls.seen.get("work", [])]


def test_an_error_start_at_process_level_catches_a_handler_error(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("charge", raising("DECLINED"))
    calls.add("work")
    doc = process_with(
        (
            "esp",
            handled(
                {
                    "error": "DECLINED",
                    "error_code_variable": "code",
                    "error_message_variable": "why",
                }
            ),
        )
    )
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["on_event"]  # 'after' never ran: the scope was interrupted
    variables = rt.engine.show(iid)["variables"]
    assert variables["code"] == "DECLINED" and variables["why"] == "declined by the bank"
    events = [e["type"] for e in rt.engine.trace(iid)]
    assert "BpmnErrorCaught" in events and "TokenFailed" not in events


def test_a_matching_code_wins_over_a_catch_all(rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("charge", raising("DECLINED"))
    calls.add("work")
    doc = process_with(
        ("any", handled({"error": "*"}, body="on_any", esp="any")),
        ("exact", handled({"error": "DECLINED"}, body="on_exact", esp="exact")),
    )
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["on_exact"]


def inner_failing() -> ProcessBuilder:
    return (
        ProcessBuilder("inner")
        .start("s_start")
        .parallel_gateway("s_fork")
        .service_task("s_slow", topic="never_fetched")
        .end("s_fail", error="OUT_OF_STOCK")
        .end("s_end")
        .sequence("s_start", "s_fork")
        .flow("s_fork", "s_slow")
        .flow("s_fork", "s_fail")
        .flow("s_slow", "s_end")
    )


def test_an_error_start_inside_a_subprocess_ends_the_subprocess_by_its_flow(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    body = inner_failing().event_sub_process(
        "s_esp", handled({"error": "*"}, body="s_handle", esp="s_esp")
    )
    doc = (
        ProcessBuilder("nested_esp")
        .start()
        .sub_process("sub", body)
        .service_task("after", handler="work")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["s_handle", "after"]
    tasks = {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}
    assert tasks["s_slow"] == "CANCELLED"


def test_the_event_subprocess_of_the_scope_comes_before_an_outer_boundary(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    body = inner_failing().event_sub_process(
        "s_esp", handled({"error": "*"}, body="s_handle", esp="s_esp")
    )
    doc = (
        ProcessBuilder("preferred")
        .start()
        .sub_process("sub", body)
        .error_boundary("oos", attached_to="sub", error="OUT_OF_STOCK")
        .service_task("backorder", handler="work")
        .end()
        .end("backordered")
        .sequence("start", "sub", "end")
        .sequence("oos", "backorder", "backordered")
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["s_handle"]


def test_an_outer_event_subprocess_catches_what_the_subprocess_does_not(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    doc = (
        ProcessBuilder("outer_esp")
        .start()
        .sub_process("sub", inner_failing())
        .end()
        .sequence("start", "sub", "end")
        .event_sub_process("esp", handled({"error": "OUT_OF_STOCK"}))
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["on_event"]
    assert rows.live_tokens(pg_db, iid) == []


def test_an_error_thrown_inside_an_event_subprocess_is_not_caught_by_it_again(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("charge", raising("DECLINED"))
    calls.add("work", raising("DECLINED"))
    doc = process_with(("esp", handled({"error": "*"})))
    iid = rt.run(doc)
    assert rows.state(pg_db, iid) == "FAILED"
    assert worked(calls) == ["on_event"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"signal": "go-${execution.getClass()}"}, "a reflection or engine API method"),
        ({"compensation": True}, "compensation start events are not supported yet"),
        ({"error": "E", "interrupting": False}, "always interrupts"),
        ({"timer": {"cycle": "every minute"}}, "neither an ISO 8601 repeating interval"),
        ({}, "needs a start event with a trigger"),
    ],
)
def test_a_bad_event_subprocess_is_refused_naming_it(change: dict[str, Any], problem: str) -> None:
    doc = process_with(("esp", handled({"error": "E"})))
    esp = next(n for n in doc["nodes"] if n["id"] == "esp")
    start = esp["nodes"][0]
    for key in ("error",):
        start.pop(key)
    start.update(change)
    with pytest.raises(InvalidDefinition, match="esp") as caught:
        compile_definition(doc)
    assert problem in str(caught.value)


def waiting_process(*esps: tuple[str, ProcessBuilder], key: str = "waits") -> dict[str, Any]:
    """A main path that waits for a message 'go' (a receive task), then ends."""
    builder = (
        ProcessBuilder(key)
        .start()
        .receive_task("wait", message="go")
        .service_task("after", handler="work")
        .end()
        .sequence("start", "wait", "after", "end")
    )
    for esp_id, body in esps:
        builder.event_sub_process(esp_id, body)
    return builder.build()


def test_an_interrupting_message_start_cancels_the_process_and_ends_it(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    iid = rt.run(waiting_process(("esp", handled({"message": "cancel"}))))
    [woken] = rt.engine.correlate("cancel", instance_id=iid, variables={"why": "customer"})
    assert rows.token(pg_db, woken).node_id == "esp"
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["on_event"]
    assert rt.engine.show(iid)["variables"]["why"] == "customer"
    with pytest.raises(NoMatchingWait):  # the instance ended: the subscription went with it
        rt.engine.correlate("cancel", instance_id=iid)
    with pytest.raises(NoMatchingWait):
        rt.engine.correlate("go", instance_id=iid)


def test_an_interrupting_message_start_is_taken_once(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    body = (
        ProcessBuilder("esp")
        .trigger_start("esp_start", message="cancel")
        .user_task("review")
        .end("esp_end")
        .sequence("esp_start", "review", "esp_end")
    )
    iid = rt.run(waiting_process(("esp", body)))
    rt.engine.correlate("cancel", instance_id=iid)
    rt.drain()
    with pytest.raises(NoMatchingWait):  # its scope listens no more once interrupted
        rt.engine.correlate("cancel", instance_id=iid)
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == []


def test_a_non_interrupting_message_start_runs_beside_the_scope_each_time(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    iid = rt.run(waiting_process(("esp", handled({"message": "note", "interrupting": False}))))
    rt.engine.correlate("note", instance_id=iid, variables={"n": 1})
    rt.drain()
    rt.engine.correlate("note", instance_id=iid, variables={"n": 2})
    rt.drain()
    assert worked(calls) == ["on_event", "on_event"]
    assert rows.state(pg_db, iid) == "RUNNING"
    rt.engine.correlate("go", instance_id=iid)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["on_event", "on_event", "after"]


def test_the_scope_waits_for_a_running_non_interrupting_event_subprocess(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    body = (
        ProcessBuilder("esp")
        .trigger_start("esp_start", message="note", interrupting=False)
        .user_task("review")
        .end("esp_end")
        .sequence("esp_start", "review", "esp_end")
    )
    iid = rt.run(waiting_process(("esp", body)))
    rt.engine.correlate("note", instance_id=iid)
    rt.engine.correlate("go", instance_id=iid)
    rt.drain()
    assert rows.state(pg_db, iid) == "RUNNING"  # the main path ended; the review is open
    with pytest.raises(NoMatchingWait):
        rt.engine.correlate("go", instance_id=iid)
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)


def test_a_message_start_inside_a_subprocess_listens_only_while_it_runs(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    inner = (
        ProcessBuilder("inner")
        .start("s_start")
        .receive_task("s_wait", message="go")
        .end("s_end")
        .sequence("s_start", "s_wait", "s_end")
        .event_sub_process("s_esp", handled({"message": "skip"}, body="s_skip", esp="s_esp"))
    )
    doc = (
        ProcessBuilder("sub_messages")
        .start()
        .sub_process("sub", inner)
        .receive_task("later", message="done")
        .service_task("after", handler="work")
        .end()
        .sequence("start", "sub", "later", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    rt.engine.correlate("skip", instance_id=iid)
    rt.drain()
    assert worked(calls) == ["s_skip"]
    with pytest.raises(NoMatchingWait):  # the subprocess was left: its subscription is gone
        rt.engine.correlate("skip", instance_id=iid)
    rt.engine.correlate("done", instance_id=iid)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["s_skip", "after"]


def test_an_event_subprocess_with_flows_or_a_trigger_outside_one_is_refused() -> None:
    doc = process_with(("esp", handled({"error": "E"})))
    doc["flows"].append({"id": "into_esp", "source": "after", "target": "esp"})
    with pytest.raises(InvalidDefinition, match="no incoming or outgoing flows"):
        compile_definition(doc)
    plain = process_with()
    plain["nodes"][0]["error"] = "E"  # a process starts by none, message or timer start events
    with pytest.raises(InvalidDefinition, match="only the start event of an event subprocess"):
        compile_definition(plain)
    twice = process_with(
        ("a", handled({"message": "go"}, body="on_a", esp="a")),
        ("b", handled({"message": "go"}, body="on_b", esp="b")),
    )
    with pytest.raises(InvalidDefinition, match="already waits for 'go'"):
        compile_definition(twice)


def _correlating(rt: Harness, iid: Any, message: str) -> Any:
    def run() -> str:
        try:
            rt.engine.correlate(message, instance_id=iid)
        except NoMatchingWait:
            return "no match"
        return "correlated"

    return run


@pytest.mark.parametrize(("interrupting", "outcomes"), [(True, 1), (False, 3)])
def test_a_message_correlated_at_once_from_several_engines(
    engine_factory: EngineFactory,
    calls: Calls,
    pg_db: Database,
    interrupting: bool,
    outcomes: int,
) -> None:
    """Interrupting: one correlation starts it, the others find no subscription (as Camunda's
    second correlation finds none); non-interrupting: each starts one."""
    calls.add("work")
    rt = engine_factory()
    rt.deploy(waiting_process(("esp", handled({"message": "m", "interrupting": interrupting}))))
    workers = [engine_factory() for _ in range(3)]
    for _ in range(3):
        iid = rt.start("waits")
        rt.drain()
        results = run_together([_correlating(w, iid, "m") for w in workers])
        for w in workers:
            w.drain()
        assert results.count("correlated") == outcomes, results
        started = rows.engine_events_of(pg_db, iid, type="MessageCorrelated")
        assert len(started) == outcomes
        if interrupting:
            assert_finished_cleanly(pg_db, iid)
        else:
            rt.engine.correlate("go", instance_id=iid)
            rt.drain()
            assert_finished_cleanly(pg_db, iid)


def test_history_and_replay_while_an_event_subprocess_runs(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    body = (
        ProcessBuilder("esp")
        .trigger_start("esp_start", message="note", interrupting=False)
        .user_task("review")
        .end("esp_end")
        .sequence("esp_start", "review", "esp_end")
    )
    iid = rt.run(waiting_process(("esp", body)))
    rt.engine.correlate("note", instance_id=iid, variables={"text": "hello"})
    rt.drain()
    assert replay.check(rt.engine.core, iid) == []
    trace = rt.engine.trace(iid)
    correlated = [e for e in trace if e["type"] == "MessageCorrelated"]
    assert [e["node_id"] for e in correlated] == ["esp_start"]
    live = {t.node_id for t in rows.live_tokens(pg_db, iid)}
    assert live == {"wait", "esp", "review"}
    rt.complete_user_task(iid)
    rt.engine.correlate("go", instance_id=iid)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert rt.engine.show(iid)["variables"]["text"] == "hello"


def scheduled(db: Database, iid: Any) -> list[str]:
    """The node ids of the instance's SCHEDULED timers."""
    with db.transaction() as conn:
        found = timers.of_instance(conn, iid)
    return sorted(t.node_id for t in found if t.state == "SCHEDULED")


def test_an_interrupting_timer_start_cancels_the_process_and_ends_it(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    iid = rt.run(waiting_process(("esp", handled({"duration": "PT10M"}))))
    assert scheduled(pg_db, iid) == ["esp_start"]  # armed with the process
    rt.pass_time(timedelta(minutes=9))
    assert worked(calls) == []
    rt.pass_time(timedelta(minutes=1))
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["on_event"]
    assert scheduled(pg_db, iid) == []
    with pytest.raises(NoMatchingWait):
        rt.engine.correlate("go", instance_id=iid)


def test_a_timer_start_is_removed_when_its_scope_ends_first(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    iid = rt.run(waiting_process(("esp", handled({"duration": "PT10M"}))))
    rt.engine.correlate("go", instance_id=iid)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert scheduled(pg_db, iid) == []
    rt.pass_time(timedelta(minutes=30))
    assert worked(calls) == ["after"]  # the late timer never fired


def test_a_non_interrupting_timer_start_in_a_subprocess_runs_beside_it(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    inner = (
        ProcessBuilder("inner")
        .start("s_start")
        .user_task("s_review")
        .end("s_end")
        .sequence("s_start", "s_review", "s_end")
        .event_sub_process(
            "s_esp",
            handled({"duration": "PT5M", "interrupting": False}, body="s_remind", esp="s_esp"),
        )
        .event_sub_process("s_late", handled({"duration": "PT1H"}, body="s_too_late", esp="s_late"))
    )
    doc = (
        ProcessBuilder("sub_timers")
        .start()
        .sub_process("sub", inner)
        .service_task("after", handler="work")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    assert scheduled(pg_db, iid) == ["s_esp_start", "s_late_start"]
    rt.pass_time(timedelta(minutes=5))
    assert worked(calls) == ["s_remind"]
    assert scheduled(pg_db, iid) == ["s_late_start"]
    rt.complete_user_task(iid)  # the subprocess ends: its timer start is removed
    assert_finished_cleanly(pg_db, iid)
    assert scheduled(pg_db, iid) == []
    rt.pass_time(timedelta(hours=2))
    assert worked(calls) == ["s_remind", "after"]


def test_an_interrupting_timer_start_in_a_subprocess_leaves_by_its_flow(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    inner = (
        ProcessBuilder("inner")
        .start("s_start")
        .user_task("s_review")
        .end("s_end")
        .sequence("s_start", "s_review", "s_end")
        .event_sub_process("s_esp", handled({"duration": "PT5M"}, body="s_expire", esp="s_esp"))
        .event_sub_process(
            "s_msg", handled({"message": "poke", "interrupting": False}, body="s_p", esp="s_msg")
        )
    )
    doc = (
        ProcessBuilder("sub_expire")
        .start()
        .sub_process("sub", inner)
        .service_task("after", handler="work")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(minutes=5))
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["s_expire", "after"]
    assert {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}["s_review"] == "CANCELLED"


def test_a_process_timer_start_outlives_the_root_leaving_a_timed_activity(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    """The root token holds the process's timer starts and also walks the main path: leaving
    an activity disarms that activity's boundary timers, not the process's subscriptions."""
    calls.add("work")
    doc = (
        ProcessBuilder("timed_root")
        .start()
        .receive_task("wait", message="go")
        .timer_boundary("slow", attached_to="wait", duration="PT1H")
        .user_task("review")
        .end()
        .end("gave_up")
        .sequence("start", "wait", "review", "end")
        .sequence("slow", "gave_up")
        .event_sub_process("esp", handled({"duration": "PT2H", "interrupting": False}))
        .build()
    )
    iid = rt.run(doc)
    assert scheduled(pg_db, iid) == ["esp_start", "slow"]
    rt.engine.correlate("go", instance_id=iid)
    rt.drain()
    assert scheduled(pg_db, iid) == ["esp_start"]
    rt.pass_time(timedelta(hours=2))
    assert worked(calls) == ["on_event"]
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)


def test_the_diagram_draws_an_event_subprocess_with_a_dotted_border(
    rt: Harness, calls: Calls
) -> None:
    calls.add("work")
    iid = rt.run(waiting_process(("esp", handled({"message": "note", "interrupting": False}))))
    rt.engine.correlate("note", instance_id=iid)
    rt.drain()
    svg = rt.engine.diagram(iid, "svg")
    ET.fromstring(svg)  # well-formed
    box = svg[svg.index('id="node-esp"') :]
    assert 'stroke-dasharray="1.5 3"' in box[: box.index("</g>")]
    mermaid = rt.engine.diagram(iid)
    assert "stroke-dasharray:2 3" in mermaid and "subgraph" in mermaid


def test_a_terminate_in_a_subprocess_ends_its_running_event_subprocesses(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    note = (
        ProcessBuilder("s_note")
        .trigger_start("s_note_start", message="note", interrupting=False)
        .user_task("s_read")
        .end("s_note_end")
        .sequence("s_note_start", "s_read", "s_note_end")
    )
    inner = (
        ProcessBuilder("inner")
        .start("s_start")
        .receive_task("s_wait", message="stop")
        .end("s_stop", terminate=True)
        .sequence("s_start", "s_wait", "s_stop")
        .event_sub_process("s_note", note)
    )
    doc = (
        ProcessBuilder("terminated_sub")
        .start()
        .sub_process("sub", inner)
        .service_task("after", handler="work")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    rt.engine.correlate("note", instance_id=iid)
    rt.engine.correlate("stop", instance_id=iid)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["after"]
    assert {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}["s_read"] == "CANCELLED"


def test_show_lists_what_can_start_now(rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("work")
    iid = rt.run(
        waiting_process(
            ("on_cancel", handled({"message": "cancel"}, body="c", esp="on_cancel")),
            ("on_late", handled({"duration": "PT1H"}, body="l", esp="on_late")),
            ("on_error", handled({"error": "*"}, body="e", esp="on_error")),
        )
    )
    subs = {s["event_subprocess"]: s for s in rt.engine.show(iid)["subscriptions"]}
    assert subs["on_cancel"]["message"] == "cancel" and subs["on_error"]["error"] == "*"
    assert "fire_at" in subs["on_late"]["timer"]
    rt.engine.correlate("cancel", instance_id=iid)  # interrupting: nothing else listens
    rt.drain()
    assert rt.engine.show(iid)["subscriptions"] == []


def test_an_error_a_called_instance_does_not_catch_reaches_the_callers_event_subprocess(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    calls.add("refuse", raising("REFUSED"))
    called = (
        ProcessBuilder("called")
        .start()
        .service_task("decide", handler="refuse")
        .end()
        .sequence("start", "decide", "end")
        .build()
    )
    rt.deploy(called)
    doc = (
        ProcessBuilder("calling")
        .start()
        .call_activity("call", process="called")
        .service_task("after", handler="work")
        .end()
        .sequence("start", "call", "after", "end")
        .event_sub_process("esp", handled({"error": "REFUSED"}))
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert worked(calls) == ["on_event"]


def test_a_due_timer_start_fired_by_two_beats_at_once_starts_once(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    rt = engine_factory()
    rt.deploy(waiting_process(("esp", handled({"duration": "PT1M", "interrupting": False}))))
    iid = rt.start("waits")
    rt.drain()
    beats = [engine_factory() for _ in range(3)]
    rt.clock.advance(timedelta(minutes=1))
    fired = run_together([b.engine.fire_due_timers for b in beats])
    for b in beats:
        b.drain()
    assert sum(fired) == 1
    assert len(rows.engine_events_of(pg_db, iid, type="TimerFired")) == 1
    assert worked(calls) == ["on_event"]
    rt.engine.correlate("go", instance_id=iid)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_a_non_interrupting_timer_cycle_starts_its_event_subprocess_at_each_tick(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    inner = (
        ProcessBuilder("inner")
        .start("s_start")
        .user_task("s_review")
        .end("s_end")
        .sequence("s_start", "s_review", "s_end")
        .event_sub_process(
            "s_esp",
            handled({"cycle": "R3/PT10M", "interrupting": False}, body="s_remind", esp="s_esp"),
        )
    )
    doc = (
        ProcessBuilder("sub_cycle")
        .start()
        .sub_process("sub", inner)
        .end()
        .sequence("start", "sub", "end")
        .build()
    )
    iid = rt.run(doc)
    for _ in range(4):
        rt.pass_time(timedelta(minutes=10))
    assert worked(calls) == ["s_remind"] * 3  # three repetitions, then none
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)
