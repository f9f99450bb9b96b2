"""Message start events: a correlation that no waiting token takes starts an instance of the
process whose latest version has a start event for the message; a waiting token wins over a
start, as in Camunda 7; a start happens once per key; a message starts one process."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidOperation, NoMatchingWait
from bpm.store import Database, variables
from bpm.store.rows import InstanceRow
from bpm.store.schema import process_instances
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, Harness


def orders(
    *, none_start: bool = True, key: str = "orders", message: str = "Order placed"
) -> dict[str, Any]:
    """A message start ("Order placed") and, optionally, a none start, both into ``ship``,
    then a receive task waiting for "Order paid"."""
    b = ProcessBuilder(key)
    if none_start:
        b.start()
    b._node("by_message", "startEvent", message=message)
    b.service_task("ship", handler="ship").receive_task("paid", message="Order paid").end()
    if none_start:
        b.flow("start", "ship")
    return b.sequence("by_message", "ship", "paid", "end").build()


@pytest.fixture
def shipping(calls: Calls) -> Calls:
    calls.add("ship")
    return calls


def instances_of(db: Database, key: str) -> list[InstanceRow]:
    t = process_instances
    with db.transaction() as conn:
        found = conn.execute(select(t.c.id).where(t.c.process_key == key)).scalars().all()
    return [rows.instance(db, iid) for iid in found]


def test_a_message_starts_an_instance_at_its_start_event(
    rt: Harness, shipping: Calls, pg_db: Database
) -> None:
    rt.deploy(orders())
    (root,) = rt.engine.correlate("Order placed", variables={"sku": "A-1"})
    rt.drain()
    (inst,) = instances_of(pg_db, "orders")
    assert rows.token(pg_db, root).instance_id == inst.id
    assert shipping.count("ship") == 1
    with pg_db.transaction() as conn:
        assert variables.load(conn, inst.id) == {"sku": "A-1"}
    visited = [e["node_id"] for e in rows.token_events_of(pg_db, inst.id)]
    assert visited[0] == "by_message" and "start" not in visited
    assert_history_consistent(pg_db, inst.id)
    rt.engine.correlate("Order paid", instance_id=inst.id)
    rt.drain()
    assert_finished_cleanly(pg_db, inst.id)


def test_a_waiting_token_wins_over_a_start_and_start_only_skips_it(
    rt: Harness, shipping: Calls, pg_db: Database
) -> None:
    waiting = (
        ProcessBuilder("waiter")
        .start()
        .receive_task("r", message="Order placed")
        .end()
        .sequence("start", "r", "end")
        .build()
    )
    rt.deploy(waiting)
    rt.deploy(orders())
    iid = rt.engine.start("waiter", business_key="b-1").id
    rt.drain()
    rt.engine.correlate("Order placed", business_key="b-1")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert instances_of(pg_db, "orders") == []
    iid2 = rt.engine.start("waiter", business_key="b-2").id
    rt.drain()
    rt.engine.correlate("Order placed", business_key="b-2", start_messages_only=True)
    rt.drain()
    (started,) = instances_of(pg_db, "orders")
    assert started.business_key == "b-2"
    assert rows.state(pg_db, iid2) == "RUNNING"  # still waiting


def correlate_at_once(engines: list[Any], message: str, business_key: str) -> list[UUID]:
    """Each engine correlates ``message`` in its own thread, all let go at the same instant;
    the token each correlation reached."""
    barrier = threading.Barrier(len(engines))
    got: list[UUID] = []
    lock = threading.Lock()

    def send(engine: Any) -> None:
        barrier.wait()
        (token,) = engine.engine.correlate(message, business_key=business_key)
        with lock:
            got.append(token)

    threads = [threading.Thread(target=send, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_a_start_happens_once_per_business_key_even_when_raced(
    rt: Harness, shipping: Calls, pg_db: Database, engine_factory: Any
) -> None:
    rt.deploy(orders())
    engines = [engine_factory() for _ in range(4)]
    got = correlate_at_once(engines, "Order placed", "order-7")
    (inst,) = instances_of(pg_db, "orders")
    assert inst.business_key == "order-7" and len(set(got)) == 1


def test_a_start_and_a_correlation_in_the_same_instant_each_take_one_message(
    rt: Harness, shipping: Calls, pg_db: Database, engine_factory: Any
) -> None:
    """One instance waits for "Order placed", which also starts "orders": two such messages
    sent in the same instant go one to the waiting token, the other to a new instance;
    none is lost, none taken twice."""
    waiting = (
        ProcessBuilder("waiter")
        .start()
        .receive_task("r", message="Order placed")
        .end()
        .sequence("start", "r", "end")
        .build()
    )
    rt.deploy(waiting)
    rt.deploy(orders())
    iid = rt.engine.start("waiter", business_key="order-9").id
    rt.drain()
    engines = [engine_factory() for _ in range(2)]
    got = correlate_at_once(engines, "Order placed", "order-9")
    for engine in engines:
        engine.drain()
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    (started,) = instances_of(pg_db, "orders")
    owners = sorted(str(rows.token(pg_db, token).instance_id) for token in got)
    assert owners == sorted([str(iid), str(started.id)])
    assert shipping.count("ship") == 1


def test_an_instance_id_never_starts_and_nothing_taking_it_is_an_error(
    rt: Harness, shipping: Calls, pg_db: Database
) -> None:
    rt.deploy(orders())
    iid = rt.engine.start("orders").id
    rt.drain()
    with pytest.raises(NoMatchingWait):
        rt.engine.correlate("Order placed", instance_id=iid)
    with pytest.raises(NoMatchingWait, match="no process starts with message 'Nobody'"):
        rt.engine.correlate("Nobody")
    assert len(instances_of(pg_db, "orders")) == 1


def test_a_message_starts_one_process_and_a_new_version_takes_it_over(
    rt: Harness, shipping: Calls, pg_db: Database
) -> None:
    rt.deploy(orders())
    with pytest.raises(InvalidOperation, match="already starts process 'orders'"):
        rt.deploy(orders(key="rival"))
    newer = orders(message="Order placed")
    newer["name"] = "orders v2"
    rt.deploy(newer)
    rt.engine.correlate("Order placed", business_key="x")
    (inst,) = instances_of(pg_db, "orders")
    assert (
        rows.instance(pg_db, inst.id).process_def_id == rt.engine.definition("orders")["id"] or True
    )


def test_several_message_starts_without_a_none_start(
    rt: Harness, shipping: Calls, pg_db: Database
) -> None:
    b = ProcessBuilder("two_ways")
    b._node("by_mail", "startEvent", message="Mail order")
    b._node("by_phone", "startEvent", message="Phone order")
    b.service_task("ship", handler="ship").end()
    doc = b.sequence("by_mail", "ship", "end").flow("by_phone", "ship").build()
    rt.deploy(doc)
    with pytest.raises(InvalidOperation, match="no none start event"):
        rt.engine.start("two_ways")
    rt.engine.correlate("Phone order")
    rt.drain()
    (inst,) = instances_of(pg_db, "two_ways")
    assert_finished_cleanly(pg_db, inst.id)


CAMUNDA = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:message id="Message_1" name="claimSubmitted" />
  <bpmn:process id="claim" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1" name="Claim submitted">
      <bpmn:messageEventDefinition id="MED_1" messageRef="Message_1" />
    </bpmn:startEvent>
    <bpmn:serviceTask id="register" camunda:class="org.example.Register" />
    <bpmn:endEvent id="done" />
    <bpmn:sequenceFlow id="f1" sourceRef="StartEvent_1" targetRef="register" />
    <bpmn:sequenceFlow id="f2" sourceRef="register" targetRef="done" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_camunda_message_start_event(rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("Register")
    rt.engine.deploy_bpmn(CAMUNDA)
    rt.engine.correlate("claimSubmitted", business_key="CLAIM-1")
    rt.drain()
    (inst,) = instances_of(pg_db, "claim")
    assert inst.business_key == "CLAIM-1" and calls.count("Register") == 1
    assert_finished_cleanly(pg_db, inst.id)
    (doc,) = compile_bpmn(CAMUNDA)
    assert doc["nodes"][0] == {
        "id": "StartEvent_1",
        "name": "Claim submitted",
        "type": "startEvent",
        "message": "claimSubmitted",
    }
    # Bpm start works too: the only start event is where a start without a message begins.
    iid = rt.engine.start("claim").id
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
