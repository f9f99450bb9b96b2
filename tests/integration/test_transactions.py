"""Transaction subprocesses: a cancel end event cancels the transaction's other work,
compensates what it completed (latest success first, nested subprocesses included, handlers
that wait too) and leaves by the cancel boundary; a hazard leaves without compensating; a
completed transaction keeps its records for an outer compensation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.parse.document import compile_definition
from bpm.engine.operations.history_views import VisitQuery
from bpm.errors import BpmnError, InvalidDefinition
from bpm.handlers import HandlerContext
from bpm.store import Database, compensation
from tests.helpers import db as rows
from tests.helpers.invariants import assert_history_consistent
from tests.helpers.journal import Journal
from tests.helpers.runtime import Calls, Harness
from tests.helpers.shared import CONFORMANCE, MISSING


@pytest.fixture
def journal() -> Journal:
    return Journal()


def comp(handler: str) -> dict[str, Any]:
    return {"handler": handler}


def register(journal: Journal, calls: Calls, *names: str) -> None:
    for name in names:
        journal.add(calls, name)


def booking(
    *,
    nested: bool = False,
    hazard: bool = False,
    waiting_undo: bool = False,
    key: str = "booking",
) -> dict[str, Any]:
    """start -> tx [hotel -> flight (-> nested sub [car]) -> ok? -> done | cancelled]
    -> after; the cancel boundary goes to ``undone``, an error boundary to ``hazard``."""
    body = ProcessBuilder("body").start("t_start")
    body._node("hotel", "serviceTask", handler="do_hotel", compensation=comp("undo_hotel"))
    if waiting_undo:
        body._node("flight", "serviceTask", handler="do_flight", compensation={"node": "undo_f"})
        body._node("undo_f", "userTask", candidate_groups=["ops"])
    else:
        body._node("flight", "serviceTask", handler="do_flight", compensation=comp("undo_flight"))
    last = "flight"
    if nested:
        inner = ProcessBuilder("inner").start("n_start")
        inner._node("car", "serviceTask", handler="do_car", compensation=comp("undo_car"))
        built = inner.end("n_end").sequence("n_start", "car", "n_end").build()
        body._node("sub", "subProcess", nodes=built["nodes"], flows=built["flows"])
        body.flow("flight", "sub")
        last = "sub"
    body._node("pay", "serviceTask", handler="boom" if hazard else "do_pay")
    body.exclusive_gateway("ok")
    body.end("t_done").cancel_end("t_cancelled")
    body.sequence("t_start", "hotel", "flight").sequence(last, "pay", "ok")
    body.flow("ok", "t_done", condition="${confirmed}")
    body.flow("ok", "t_cancelled", condition="${not confirmed}")
    b = ProcessBuilder(key).start()
    b.sub_process("tx", body, transaction=True)
    b.cancel_boundary("on_cancel", attached_to="tx").error_boundary(
        "on_hazard", attached_to="tx", error="PAY"
    )
    b.service_task("undone", handler="after_cancel").service_task("hazard", handler="after_hazard")
    b.service_task("after", handler="after_ok").end("end").end("end_cancel").end("end_hazard")
    b.sequence("start", "tx", "after", "end")
    b.sequence("on_cancel", "undone", "end_cancel").sequence("on_hazard", "hazard", "end_hazard")
    return b.build()


def records(db: Database, iid: UUID) -> dict[str, str]:
    with db.transaction() as conn:
        return {r.node_id: r.status for r in compensation.of_instance(conn, iid)}


def all_handlers(journal: Journal, calls: Calls) -> None:
    register(
        journal,
        calls,
        *(f"do_{n}" for n in ("hotel", "flight", "car", "pay")),
        *(f"undo_{n}" for n in ("hotel", "flight", "car")),
        "after_cancel",
        "after_hazard",
        "after_ok",
    )

    def boom(ctx: HandlerContext) -> None:
        raise BpmnError("PAY", "card declined")

    journal.add(calls, "boom", boom)


def test_a_cancel_end_compensates_latest_first_then_leaves_by_the_cancel_boundary(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    iid = rt.run(booking(), {"confirmed": False})
    db = rt.engine.db
    assert journal.lines == [
        "do_hotel",
        "do_flight",
        "do_pay",
        "undo_flight",
        "undo_hotel",
        "after_cancel",
    ]
    assert rows.state(db, iid) == "COMPLETED"
    assert records(db, iid) == {"hotel": "COMPLETED", "flight": "COMPLETED"}
    visits = rt.engine.find_visits(VisitQuery(instance_id=iid))
    kinds = {v.node_id: (v.type, v.canceled) for v in visits}
    assert kinds["tx"][0] == "transaction"  # left by the boundary, as any interrupted activity
    assert kinds["t_cancelled"] == ("cancelEndEvent", True)
    assert kinds["on_cancel"] == ("cancelBoundaryCatch", False)
    by_node = {t.node_id: t.state for t in rows.tokens_of(db, iid) if t.mode == "FORWARD"}
    assert by_node["t_cancelled"] == "CANCELLED"  # the boundary interrupted the transaction
    types = rows.engine_event_types(db, iid)
    assert types.index("TransactionCancelled") < types.index("CompensationTokenCreated")
    moved = rows.token_events_of(db, iid, type="TRANSACTION_CANCELLED")
    assert [e["node_id"] for e in moved] == ["on_cancel"]
    assert_history_consistent(db, iid)


def test_a_nested_subprocess_inside_the_transaction_is_compensated_too(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    iid = rt.run(booking(nested=True), {"confirmed": False})
    assert journal.lines[-4:] == ["undo_car", "undo_flight", "undo_hotel", "after_cancel"]
    assert records(rt.engine.db, iid) == {
        "hotel": "COMPLETED",
        "flight": "COMPLETED",
        "car": "COMPLETED",
    }
    assert rows.state(rt.engine.db, iid) == "COMPLETED"
    assert_history_consistent(rt.engine.db, iid)


def test_a_waiting_compensation_handler_is_awaited_before_the_cancel_boundary(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    iid = rt.run(booking(waiting_undo=True), {"confirmed": False})
    db = rt.engine.db
    assert journal.lines == ["do_hotel", "do_flight", "do_pay"]  # undo_f waits for a person
    waiting = {t.node_id for t in rows.live_tokens(db, iid) if t.state == "WAITING"}
    assert "t_cancelled" in waiting  # the cancel end event is active while it compensates
    (task,) = rt.engine.user_tasks(group="ops")
    assert task["node_id"] == "flight"
    # Camunda's activity tree: the transaction holds the cancel end event and the handler
    (tx,) = rt.engine.activity_tree(iid).children
    assert (tx.node_id, tx.node_type) == ("tx", "transaction")
    assert sorted(child.node_id for child in tx.children) == ["flight", "t_cancelled"]
    rt.engine.complete_user_task(task["id"])
    rt.drain()
    assert journal.lines[3:] == ["undo_hotel", "after_cancel"]
    assert rows.state(db, iid) == "COMPLETED"
    assert_history_consistent(db, iid)


def test_a_hazard_leaves_by_the_error_boundary_without_compensating(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    iid = rt.run(booking(hazard=True), {"confirmed": False})
    db = rt.engine.db
    assert journal.lines == ["do_hotel", "do_flight", "boom", "after_hazard"]
    assert records(db, iid) == {"hotel": "PENDING", "flight": "PENDING"}
    assert rows.state(db, iid) == "COMPLETED"
    assert "TransactionCancelled" not in rows.engine_event_types(db, iid)
    assert_history_consistent(db, iid)


def test_an_uncaught_error_in_the_transaction_compensates_nothing_either(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    doc = booking(hazard=True, key="uncaught")
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("on_hazard", "hazard", "end_hazard")]
    doc["flows"] = [f for f in doc["flows"] if f["source"] not in ("on_hazard", "hazard")]
    iid = rt.run(doc, {"confirmed": False})
    db = rt.engine.db
    assert journal.lines == ["do_hotel", "do_flight", "boom"]
    assert records(db, iid) == {"hotel": "PENDING", "flight": "PENDING"}
    assert rows.state(db, iid) == "FAILED"  # an incident for an operator, as without a saga
    assert "TransactionCancelled" not in rows.engine_event_types(db, iid)
    assert_history_consistent(db, iid)


def test_a_completed_transaction_keeps_its_records_for_an_outer_compensation(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    doc = booking(key="outer")
    after = next(n for n in doc["nodes"] if n["id"] == "after")
    after.clear()
    after.update({"id": "after", "type": "compensationThrow"})
    iid = rt.run(doc, {"confirmed": True})
    db = rt.engine.db
    assert journal.lines == ["do_hotel", "do_flight", "do_pay", "undo_flight", "undo_hotel"]
    assert records(db, iid) == {"hotel": "COMPLETED", "flight": "COMPLETED"}
    assert rows.state(db, iid) == "COMPLETED"
    assert "TransactionCancelled" not in rows.engine_event_types(db, iid)
    assert_history_consistent(db, iid)


def test_a_redelivered_job_that_finishes_the_compensation_does_nothing_twice(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """The job that nudges the cancel end event's token once its last compensation is done
    is delivered twice: the second finds the token moved on (its version) and does nothing."""
    all_handlers(journal, calls)
    rt.deploy(booking(waiting_undo=True))
    iid = rt.start("booking", {"confirmed": False})
    rt.drain()
    (task,) = rt.engine.user_tasks(group="ops")
    rt.engine.complete_user_task(task["id"])
    jobs = rt.queued()
    rt.queue.dispatch(jobs)  # every job once more: a broker that redelivers
    rt.drain()
    db = rt.engine.db
    assert journal.lines.count("undo_hotel") == 1
    assert journal.lines.count("after_cancel") == 1
    assert [e["node_id"] for e in rows.token_events_of(db, iid, type="TRANSACTION_CANCELLED")] == [
        "on_cancel"
    ]
    assert rows.state(db, iid) == "COMPLETED"
    assert_history_consistent(db, iid)


# --- refused at deploy ---------------------------------------------------------------------


def _refused(doc: dict[str, Any], element: str, text: str) -> None:
    with pytest.raises(InvalidDefinition, match=text) as caught:
        compile_definition(doc)
    assert caught.value.element == element


def test_a_cancel_end_event_outside_a_transaction_is_refused() -> None:
    doc = booking()
    doc["nodes"][1]["transaction"] = False
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] != "on_cancel"]
    doc["flows"] = [f for f in doc["flows"] if f["source"] != "on_cancel"]
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("undone", "end_cancel")]
    doc["flows"] = [f for f in doc["flows"] if f["source"] != "undone"]
    _refused(doc, "t_cancelled", "a cancel end event is only allowed inside a transaction")


def test_a_transaction_with_a_cancel_end_but_no_cancel_boundary_is_refused() -> None:
    doc = booking()
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("on_cancel", "undone", "end_cancel")]
    doc["flows"] = [f for f in doc["flows"] if f["source"] not in ("on_cancel", "undone")]
    _refused(doc, "t_cancelled", "transaction 'tx' has a cancel end event but no cancel boundary")


def test_a_cancel_boundary_on_a_subprocess_that_is_no_transaction_is_refused() -> None:
    b = ProcessBuilder("plain").start()
    b.sub_process("sub", ProcessBuilder("b").start("s").end("e").sequence("s", "e"))
    b.cancel_boundary("on_cancel", attached_to="sub").end("end").end("end2")
    doc = b.sequence("start", "sub", "end").sequence("on_cancel", "end2").build()
    _refused(doc, "on_cancel", "a cancel boundary event can only be attached to a transaction")


def test_a_non_interrupting_cancel_boundary_is_refused() -> None:
    doc = booking()
    next(n for n in doc["nodes"] if n["id"] == "on_cancel")["interrupting"] = False
    _refused(doc, "on_cancel", "a cancel boundary event is always interrupting")


def test_a_second_cancel_boundary_is_refused() -> None:
    doc = booking()
    doc["nodes"].append(
        {"id": "on_cancel2", "type": "boundaryEvent", "attachedTo": "tx", "cancel": True}
    )
    doc["flows"].append({"id": "c2", "source": "on_cancel2", "target": "end_cancel"})
    _refused(doc, "on_cancel2", "already has the cancel boundary event 'on_cancel'")


# --- the conformance corpus's model, one compensation at a time -----------------------------

CAMUNDA_MODEL = (
    CONFORMANCE
    / "public"
    / "camunda-bpm-platform__TransactionSubProcessTest.testWaitstateCompensationHandler.bpmn"
)


def _handlers(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["handler"]} if isinstance(value.get("handler"), str) else set()
        return found.union(*(_handlers(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_handlers(v) for v in value))
    return set()


@pytest.mark.skipif(not CAMUNDA_MODEL.is_file(), reason=MISSING)
def test_camundas_waitstate_compensation_model_runs_to_the_cancel_boundary(
    rt: Harness, calls: Calls
) -> None:
    """Camunda's testWaitstateCompensationHandler, driven one handler at a time (the order
    this engine opens them in): undoChargeCard runs, then each user task handler waits,
    latest success first (bookFlight, then the five bookHotel iterations); then the cancel
    boundary leads to afterCancellation, and the instance ends once it is signalled."""
    (doc,) = compile_bpmn(CAMUNDA_MODEL.read_bytes())
    for name in _handlers(doc):
        calls.add(name)
    rt.deploy(doc)
    iid = rt.start("transactionProcess")
    rt.drain()
    (ask,) = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(ask["id"], {"confirmed": False})
    rt.drain()
    handled = []
    while open_tasks := rt.engine.user_tasks(instance_id=iid):
        (task,) = open_tasks  # one at a time
        handled.append(task["node_id"])
        rt.engine.complete_user_task(task["id"])
        rt.drain()
    assert handled == ["bookFlight", *(["bookHotel"] * 5)]
    db = rt.engine.db
    waiting = [t.node_id for t in rows.live_tokens(db, iid) if t.state == "WAITING"]
    assert "afterCancellation" in waiting
    rt.engine.correlate("afterCancellation", instance_id=iid)
    rt.drain()
    assert rows.state(db, iid) == "COMPLETED"
    assert set(records(db, iid).values()) == {"COMPLETED"}
    assert_history_consistent(db, iid)


# --- what else a cancel meets -----------------------------------------------------------------


def forked(*, undo: str = "undo_hotel", compensable: bool = True) -> dict[str, Any]:
    """tx [fork -> (hotel -> cancel end) | (approve: a user task)] with a cancel boundary."""
    body = ProcessBuilder("body").start("t_start").parallel_gateway("fork")
    comp_spec = comp(undo) if compensable else None
    body._node("hotel", "serviceTask", handler="do_hotel", compensation=comp_spec)
    body.user_task("approve").end("t_approved").cancel_end("t_cancelled")
    body.sequence("t_start", "fork", "hotel", "t_cancelled").sequence("fork", "approve")
    body.flow("approve", "t_approved")
    b = ProcessBuilder("forked").start().sub_process("tx", body, transaction=True)
    b.cancel_boundary("on_cancel", attached_to="tx").service_task("undone", handler="after_cancel")
    b.end().end("never").sequence("start", "tx", "never").sequence("on_cancel", "undone", "end")
    return b.build()


def test_the_transactions_other_work_is_cancelled_before_it_compensates(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    iid = rt.run(forked())
    db = rt.engine.db
    assert journal.lines == ["do_hotel", "undo_hotel", "after_cancel"]
    assert rt.engine.user_tasks(instance_id=iid) == []  # the approval was cancelled
    (approve,) = [t for t in rows.tokens_of(db, iid) if t.node_id == "approve"]
    assert approve.state == "CANCELLED"
    assert rows.state(db, iid) == "COMPLETED"
    types = rows.engine_event_types(db, iid)
    assert types.index("TransactionCancelled") < types.index("CompensationThrown")
    assert_history_consistent(db, iid)


def test_with_nothing_to_compensate_the_cancel_boundary_is_taken_at_once(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)
    iid = rt.run(forked(compensable=False))
    assert journal.lines == ["do_hotel", "after_cancel"]
    assert rows.state(rt.engine.db, iid) == "COMPLETED"
    assert_history_consistent(rt.engine.db, iid)


def test_a_failing_compensation_is_recorded_failed_and_the_cancel_still_completes(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    all_handlers(journal, calls)

    def broken(ctx: HandlerContext) -> None:
        raise RuntimeError("cannot undo")

    journal.add(calls, "undo_broken", broken)
    iid = rt.run(forked(undo="undo_broken"))
    db = rt.engine.db
    assert journal.lines == ["do_hotel", "undo_broken", "after_cancel"]
    assert records(db, iid) == {"hotel": "FAILED"}
    # The incident was opened, then resolved when the cancel boundary ended the transaction
    # with everything in it; the record stays FAILED for an audit to find.
    (incident,) = rows.incidents_of(db, iid)
    assert (incident.kind, incident.node_id, incident.state) == (
        "compensation",
        "hotel",
        "RESOLVED",
    )
    assert rows.state(db, iid) == "COMPLETED"
    assert_history_consistent(db, iid)


def test_a_nested_subprocess_cut_off_by_the_cancel_is_not_compensated(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """BPMN (and Camunda): only nested subprocesses that completed are compensated. The car
    was booked inside a subprocess still waiting for a person when the cancel came: its
    record is CANCELLED, not undone; the hotel, booked beside it, is undone."""
    all_handlers(journal, calls)
    inner = ProcessBuilder("inner").start("n_start")
    inner._node("car", "serviceTask", handler="do_car", compensation=comp("undo_car"))
    inner.user_task("confirm_car").end("n_end").sequence("n_start", "car", "confirm_car", "n_end")
    built = inner.build()
    body = ProcessBuilder("body").start("t_start").parallel_gateway("fork")
    body._node("sub", "subProcess", nodes=built["nodes"], flows=built["flows"])
    body._node("hotel", "serviceTask", handler="do_hotel", compensation=comp("undo_hotel"))
    body.end("t_sub_done").cancel_end("t_cancelled")
    body.sequence("t_start", "fork", "sub", "t_sub_done").sequence("fork", "hotel", "t_cancelled")
    b = ProcessBuilder("cut_off").start().sub_process("tx", body, transaction=True)
    b.cancel_boundary("on_cancel", attached_to="tx").service_task("undone", handler="after_cancel")
    b.end().end("never").sequence("start", "tx", "never").sequence("on_cancel", "undone", "end")
    iid = rt.run(b.build())
    db = rt.engine.db
    assert "undo_car" not in journal.lines
    assert journal.lines[-2:] == ["undo_hotel", "after_cancel"]
    assert records(db, iid) == {"car": "CANCELLED", "hotel": "COMPLETED"}
    assert rt.engine.user_tasks(instance_id=iid) == []
    assert rows.state(db, iid) == "COMPLETED"
    assert_history_consistent(db, iid)


def test_a_timer_on_the_transaction_firing_while_it_compensates_ends_the_cancellation(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """The transaction's interrupting timer fires while a person still has to undo the
    flight: the cancellation ends there (the open handler task and the compensations still
    to come are CANCELLED) and the token takes the timer's path, not the cancel boundary's."""
    all_handlers(journal, calls)
    journal.add(calls, "too_late")
    doc = booking(waiting_undo=True, key="timed")
    doc["nodes"].append(
        {"id": "late", "type": "boundaryEvent", "attachedTo": "tx", "timer": {"duration": "PT1H"}}
    )
    doc["nodes"].append({"id": "too_late", "type": "serviceTask", "handler": "too_late"})
    doc["nodes"].append({"id": "end_late", "type": "endEvent"})
    doc["flows"] += [
        {"id": "l1", "source": "late", "target": "too_late"},
        {"id": "l2", "source": "too_late", "target": "end_late"},
    ]
    iid = rt.run(doc, {"confirmed": False})
    assert len(rt.engine.user_tasks(group="ops")) == 1
    rt.pass_time(timedelta(hours=2))
    db = rt.engine.db
    assert journal.lines == ["do_hotel", "do_flight", "do_pay", "too_late"]
    assert rt.engine.user_tasks(instance_id=iid) == []
    assert records(db, iid) == {"hotel": "CANCELLED", "flight": "CANCELLED"}
    assert rows.state(db, iid) == "COMPLETED"
    assert_history_consistent(db, iid)


MANUAL_UNDO = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="Defs" targetNamespace="t">
  <bpmn:process id="trip" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="booking" />
    <bpmn:transaction id="booking" name="Book the trip">
      <bpmn:startEvent id="b_start" />
      <bpmn:sequenceFlow id="b1" sourceRef="b_start" targetRef="reserve_flight" />
      <bpmn:serviceTask id="reserve_flight" camunda:class="do_flight" />
      <bpmn:boundaryEvent id="undo_flight_b" attachedToRef="reserve_flight">
        <bpmn:compensateEventDefinition />
      </bpmn:boundaryEvent>
      <bpmn:manualTask id="cancel_flight" name="Cancel the flight" isForCompensation="true" />
      <bpmn:sequenceFlow id="b2" sourceRef="reserve_flight" targetRef="reserve_hotel" />
      <bpmn:serviceTask id="reserve_hotel" camunda:class="do_hotel" />
      <bpmn:boundaryEvent id="undo_hotel_b" attachedToRef="reserve_hotel">
        <bpmn:compensateEventDefinition />
      </bpmn:boundaryEvent>
      <bpmn:serviceTask id="cancel_hotel" camunda:class="undo_hotel" isForCompensation="true" />
      <bpmn:sequenceFlow id="b3" sourceRef="reserve_hotel" targetRef="cancelled" />
      <bpmn:endEvent id="cancelled">
        <bpmn:cancelEventDefinition />
      </bpmn:endEvent>
      <bpmn:association id="a1" associationDirection="One" sourceRef="undo_flight_b"
          targetRef="cancel_flight" />
      <bpmn:association id="a2" associationDirection="One" sourceRef="undo_hotel_b"
          targetRef="cancel_hotel" />
    </bpmn:transaction>
    <bpmn:boundaryEvent id="on_cancel" attachedToRef="booking">
      <bpmn:cancelEventDefinition />
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="on_cancel" targetRef="tell" />
    <bpmn:serviceTask id="tell" camunda:class="after_cancel" />
    <bpmn:sequenceFlow id="f3" sourceRef="tell" targetRef="end_cancel" />
    <bpmn:endEvent id="end_cancel" />
    <bpmn:sequenceFlow id="f4" sourceRef="booking" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_manual_task_as_compensation_handler_undoes_by_doing_nothing(
    rt: Harness, journal: Journal, calls: Calls, pg_db: Database
) -> None:
    """Camunda passes through a manual task: as a compensation handler it is done at once."""
    register(journal, calls, "do_flight", "do_hotel", "undo_hotel", "after_cancel")
    rt.engine.deploy_bpmn(MANUAL_UNDO)
    iid = rt.start("trip")
    rt.drain()
    assert journal.lines == ["do_flight", "do_hotel", "undo_hotel", "after_cancel"]
    assert rows.state(pg_db, iid) == "COMPLETED"
    with pg_db.transaction() as conn:
        records = compensation.of_instance(conn, iid)
    assert sorted(r.status for r in records) == ["COMPLETED", "COMPLETED"]
    assert_history_consistent(pg_db, iid)
