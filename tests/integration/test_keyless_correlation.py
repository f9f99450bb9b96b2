"""A correlation that names no instance (neither business key nor instance id) goes to the
instance that waits for the message, wherever it waits (a receive task, a message boundary
event, an event-based gateway, an event subprocess); several waiting are ambiguous unless the
caller takes them all; none waiting lets a message start event take it; as in Camunda 7."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.errors import AmbiguousCorrelation, NoMatchingWait
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.race import run_together
from tests.helpers.runtime import Calls, Harness
from tests.integration.test_event_gateways import payment
from tests.integration.test_event_subprocesses import handled, waiting_process
from tests.integration.test_message_boundaries import order
from tests.integration.test_message_starts import instances_of, orders


def waiter(key: str = "waiter", message: str = "Order placed") -> dict[str, Any]:
    return (
        ProcessBuilder(key)
        .start()
        .receive_task("r", message=message)
        .end()
        .sequence("start", "r", "end")
        .build()
    )


@pytest.fixture
def paths(calls: Calls) -> Calls:
    for name in ("ship", "refund", "cancel", "work"):
        calls.add(name)
    return calls


def test_the_one_waiting_instance_takes_it_before_a_start_event(
    rt: Harness, paths: Calls, pg_db: Database
) -> None:
    rt.deploy(orders())
    iid = rt.run(waiter(), {"n": 1})
    (token,) = rt.engine.correlate("Order placed", variables={"paid": True})
    assert rows.token(pg_db, token).instance_id == iid
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert rt.engine.show(iid)["variables"] == {"n": 1, "paid": True}
    assert instances_of(pg_db, "orders") == []
    assert_history_consistent(pg_db, iid)
    # Nobody waits now: the message start event takes the next one.
    (root,) = rt.engine.correlate("Order placed")
    (started,) = instances_of(pg_db, "orders")
    assert rows.token(pg_db, root).instance_id == started.id


def test_two_waiting_are_ambiguous_unless_all_are_asked_for(
    rt: Harness, paths: Calls, pg_db: Database
) -> None:
    old = rt.run(waiter())
    rt.deploy(waiter())  # the same document: no new version
    rt.deploy(waiter(message="Order placed") | {"name": "v2"})
    new = rt.run(waiter() | {"name": "v2"})
    assert rows.instance(pg_db, old).process_def_id != rows.instance(pg_db, new).process_def_id
    with pytest.raises(AmbiguousCorrelation, match="2 tokens"):
        rt.engine.correlate("Order placed")
    assert rows.state(pg_db, old) == rows.state(pg_db, new) == "RUNNING"
    assert len(rt.engine.correlate("Order placed", all_waiting=True)) == 2
    rt.drain()
    for iid in (old, new):
        assert_finished_cleanly(pg_db, iid)
    with pytest.raises(NoMatchingWait, match="no instance waits for it"):
        rt.engine.correlate("Order placed")


def test_correlation_keys_pick_the_instance(rt: Harness, paths: Calls, pg_db: Database) -> None:
    first = rt.run(waiter(), {"order": "A-1"})
    second = rt.run(waiter(), {"order": "A-2"})
    rt.engine.correlate_tokens("Order placed", correlation_keys={"order": "A-2"})
    rt.drain()
    assert rows.state(pg_db, first) == "RUNNING"
    assert_finished_cleanly(pg_db, second)


@pytest.mark.parametrize("host", ["user", "external", "subprocess"])
def test_a_message_boundary_listens_for_it(
    rt: Harness, paths: Calls, pg_db: Database, host: str
) -> None:
    iid = rt.run(order(host, interrupting=True))
    rt.engine.correlate("Order cancelled")
    rt.drain()
    assert paths.count("refund") == 1 and paths.count("ship") == 0
    assert_finished_cleanly(pg_db, iid)


def test_an_event_gateway_listens_for_it(rt: Harness, paths: Calls, pg_db: Database) -> None:
    iid = rt.run(payment())
    rt.engine.correlate("Payment received")
    rt.drain()
    assert paths.count("ship") == 1 and paths.count("cancel") == 0
    assert_finished_cleanly(pg_db, iid)


def test_an_event_subprocess_of_the_process_listens_for_it(
    rt: Harness, paths: Calls, pg_db: Database
) -> None:
    iid = rt.run(waiting_process(("esp", handled({"message": "cancel"}))))
    [woken] = rt.engine.correlate("cancel")
    assert rows.token(pg_db, woken).node_id == "esp"
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_an_ended_instance_no_longer_listens(rt: Harness, paths: Calls, pg_db: Database) -> None:
    iid = rt.run(waiter())
    rt.engine.correlate("Order placed")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    with pytest.raises(NoMatchingWait, match="no process starts with message 'Order placed'"):
        rt.engine.correlate("Order placed")


def test_a_start_and_a_keyless_correlation_in_the_same_instant_each_take_one(
    rt: Harness, paths: Calls, pg_db: Database, engine_factory: Any
) -> None:
    """One instance waits for "Order placed", which also starts "orders": two keyless
    messages sent in the same instant go one to the waiting token, the other to a new
    instance (its message id tells the two starts apart); none lost, none taken twice."""
    rt.deploy(orders())
    iid = rt.run(waiter())
    engines = [engine_factory() for _ in range(2)]
    got = run_together(
        [
            partial(e.engine.correlate, "Order placed", message_id=f"m-{n}")
            for n, e in enumerate(engines)
        ]
    )
    for engine in engines:
        engine.drain()
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    (started,) = instances_of(pg_db, "orders")
    owners = sorted(str(rows.token(pg_db, token).instance_id) for (token,) in got)
    assert owners == sorted([str(iid), str(started.id)])
