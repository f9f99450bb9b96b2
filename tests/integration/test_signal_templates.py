"""Instance-specific signals: a catching event's signal name with ``${...}`` (Camunda 7
models' ``KundeAngelegtSignal-${execution.processBusinessKey}``), evaluated when a signal is
thrown for each token waiting there, over its variables and its instance's business key; a
throw reaches the tokens whose evaluated name equals the thrown one, and a token whose
template fails to evaluate is skipped without failing the throw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.states import InstanceState
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Harness

MODELS = Path(__file__).parent / "models"


def waiter(signal: str = "done-${execution.processBusinessKey}") -> dict[str, Any]:
    return (
        ProcessBuilder("waiter")
        .start()
        .signal_event("wait", signal=signal)
        .end()
        .sequence("start", "wait", "end")
        .build()
    )


def started(rt: Harness, key: str, business_key: str, **variables: Any) -> Any:
    iid = rt.start(key, variables, business_key=business_key)
    rt.drain()
    return iid


def test_a_throw_moves_only_the_instance_whose_name_it_gives(rt: Harness, pg_db: Database) -> None:
    rt.deploy(waiter())
    a, b = started(rt, "waiter", "A"), started(rt, "waiter", "B")
    assert rt.engine.throw_signal("done-A", {"x": 1}).recipients == 1
    rt.drain()
    assert rows.state(pg_db, a) == InstanceState.COMPLETED
    assert rt.engine.show(a)["variables"]["x"] == 1
    assert rows.state(pg_db, b) == InstanceState.RUNNING
    assert rt.engine.throw_signal("done-${execution.processBusinessKey}").recipients == 0
    assert rt.engine.throw_signal("done-B").recipients == 1
    rt.drain()
    for iid in (a, b):
        assert rows.state(pg_db, iid) == InstanceState.COMPLETED
        assert_finished_cleanly(pg_db, iid)
        assert_history_consistent(pg_db, iid)


def test_a_template_reads_process_variables_and_a_failing_one_is_skipped(
    rt: Harness, pg_db: Database
) -> None:
    rt.deploy(waiter("konto-${execution.processBusinessKey}-${payload.konto}"))
    good = started(rt, "waiter", "K", payload={"konto": "giro"})
    broken = started(rt, "waiter", "K2")  # no payload: its template cannot be evaluated
    other = started(rt, "waiter", "K3", payload={"konto": "giro"})
    assert rt.engine.throw_signal("konto-K-giro").recipients == 1
    rt.drain()
    assert rows.state(pg_db, good) == InstanceState.COMPLETED
    assert rows.state(pg_db, broken) == InstanceState.RUNNING
    assert rows.state(pg_db, other) == InstanceState.RUNNING
    assert rows.incidents_of(pg_db, broken, only_open=True) == []  # skipped, not failed
    assert rt.engine.throw_signal("konto-K3-giro").recipients == 1
    rt.drain()
    assert rows.state(pg_db, other) == InstanceState.COMPLETED


def test_a_boundary_and_an_event_subprocess_start_with_template_names(
    rt: Harness, pg_db: Database
) -> None:
    handler = (
        ProcessBuilder("h")
        .trigger_start("hs", signal="alarm-${region}", interrupting=False)
        .task("handled")
        .end("he")
        .sequence("hs", "handled", "he")
    )
    doc = (
        ProcessBuilder("guarded")
        .start()
        .user_task("work")
        .signal_boundary("stop", attached_to="work", signal="stop-#{execution.processBusinessKey}")
        .end("stopped")
        .end()
        .event_sub_process("alarm", handler)
        .sequence("start", "work", "end")
        .sequence("stop", "stopped")
        .build()
    )
    rt.deploy(doc)
    a = started(rt, "guarded", "A", region="north")
    b = started(rt, "guarded", "B", region="south")
    assert rt.engine.throw_signal("alarm-south").recipients == 1
    rt.drain()
    assert rows.token_events_of(pg_db, b, node_id="handled")
    assert not rows.token_events_of(pg_db, a, node_id="handled")
    assert rt.engine.throw_signal("stop-A").recipients == 1
    rt.drain()
    assert rows.state(pg_db, a) == InstanceState.COMPLETED
    assert rows.token_events_of(pg_db, a, node_id="stopped")
    assert rows.state(pg_db, b) == InstanceState.RUNNING
    assert_history_consistent(pg_db, a)
    assert_history_consistent(pg_db, b)


def test_an_exact_and_a_template_catch_of_one_token_get_one_delivery(
    rt: Harness, pg_db: Database
) -> None:
    doc = (
        ProcessBuilder("both")
        .start()
        .user_task("work")
        .signal_boundary("exact", attached_to="work", signal="stop-A", interrupting=False)
        .signal_boundary(
            "templ", attached_to="work", signal="stop-${execution.businessKey}", interrupting=False
        )
        .end("e1")
        .end("e2")
        .end()
        .sequence("start", "work", "end")
        .sequence("exact", "e1")
        .sequence("templ", "e2")
        .build()
    )
    rt.deploy(doc)
    a = started(rt, "both", "A")
    assert rt.engine.throw_signal("stop-A").recipients == 1
    rt.drain()
    assert rows.token_events_of(pg_db, a, node_id="e1", type="COMPLETED")
    assert rows.token_events_of(pg_db, a, node_id="e2", type="COMPLETED")


def test_a_camunda_modeler_model_waits_for_its_customer(rt: Harness, pg_db: Database) -> None:
    deployed = rt.engine.deploy_bpmn((MODELS / "kunde_signals.bpmn").read_bytes())
    assert {d.key for d in deployed} == {"kundeWarten", "kundeAnlegen"}
    k1 = started(rt, "kundeWarten", "K-1")
    k2 = started(rt, "kundeWarten", "K-2")
    subs = rt.engine.event_subscriptions(k1)
    assert [s["event_name"] for s in subs] == [
        "KundeAngelegtSignal-${execution.processBusinessKey}"
    ]
    thrower = started(rt, "kundeAnlegen", "T", kundeId="K-2")
    assert rows.state(pg_db, thrower) == InstanceState.COMPLETED
    rt.drain()
    assert rows.state(pg_db, k1) == InstanceState.RUNNING
    assert [t.node_id for t in rows.live_tokens(pg_db, k1)] == ["Event_KundeAngelegt"]
    assert [t.node_id for t in rows.live_tokens(pg_db, k2)] == ["Activity_Konto"]
    rt.engine.throw_signal("StornoSignal-K-2")
    rt.drain()
    assert rows.state(pg_db, k2) == InstanceState.COMPLETED
    assert rows.token_events_of(pg_db, k2, node_id="Event_Storniert")
    assert_finished_cleanly(pg_db, k2)
    assert_history_consistent(pg_db, k2)


def test_a_template_signal_after_an_event_based_gateway(rt: Harness, pg_db: Database) -> None:
    doc = (
        ProcessBuilder("raced")
        .start()
        ._node("gw", "eventBasedGateway")
        .signal_event("sig", signal="ready-${execution.processInstanceId}")
        .timer("late", duration="PT1H")
        .end("signalled")
        .end("timed_out")
        .sequence("start", "gw", "sig", "signalled")
        .sequence("gw", "late", "timed_out")
        .build()
    )
    rt.deploy(doc)
    iid = started(rt, "raced", "R")
    assert rt.engine.throw_signal(f"ready-{iid}").recipients == 1
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert rows.token_events_of(pg_db, iid, node_id="signalled")
    assert_finished_cleanly(pg_db, iid)


def test_a_template_reads_the_local_variables_its_token_sees(rt: Harness, pg_db: Database) -> None:
    body = (
        ProcessBuilder("each")
        .start("s")
        .signal_event("wait", signal="item-${execution.processBusinessKey}-${x}")
        .end("e")
        .sequence("s", "wait", "e")
    )
    doc = (
        ProcessBuilder("items")
        .start()
        .sub_process("mi", body, multi_instance={"collection": "xs", "elementVariable": "x"})
        .end()
        .sequence("start", "mi", "end")
        .build()
    )
    rt.deploy(doc)
    iid = started(rt, "items", "L", xs=["a", "b"])
    assert rt.engine.throw_signal("item-L-b").recipients == 1
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.RUNNING
    assert [t.node_id for t in rows.live_tokens(pg_db, iid) if t.node_id == "wait"] == ["wait"]
    assert rt.engine.throw_signal("item-L-a").recipients == 1
    rt.drain()
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert_finished_cleanly(pg_db, iid)
    assert_history_consistent(pg_db, iid)
