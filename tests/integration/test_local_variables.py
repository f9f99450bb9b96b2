"""Local variables: a subprocess or activity with input mappings is a scope of its own.

Each test runs on PostgreSQL and on SQLite (embedded mode): shadowing, the write rule (the
scope that has the name, else the instance), output mappings, scope end with its history
row, an external task's fetch and local complete, a user task's local complete, and replay
rebuilding the local variables exactly at every point."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from bpm.embedded import EmbeddedRuntime
from bpm.engine.operations import replay
from bpm.engine.operations.external import TopicRequest
from bpm.errors import DefinitionError
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import Database
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import EngineFactory, Harness

Seen = list[dict[str, Any]]


@pytest.fixture(params=["pg", "lite"])
def lrt(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, handlers: HandlerRegistry
) -> Iterator[Harness]:
    if request.param == "pg":
        factory: EngineFactory = request.getfixturevalue("engine_factory")
        yield factory()
        return
    embedded = EmbeddedRuntime(
        f"sqlite:///{tmp_path / 'locals.db'}", handlers=handlers, clock=clock
    )
    try:
        yield Harness(embedded.engine, embedded.dispatcher, clock)
    finally:
        embedded.close()


def recorder(handlers: HandlerRegistry, name: str, result: dict[str, Any] | None = None) -> Seen:
    """A handler that remembers what it saw and returns ``result``."""
    seen: Seen = []

    def run(ctx: HandlerContext) -> dict[str, Any]:
        seen.append(dict(ctx.variables))
        return dict(result or {})

    handlers.register(name, run, replace=True)
    return seen


def flows(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"id": f"f_{a}_{b}", "source": a, "target": b} for a, b in pairs]


def scoped_order(**sub_keys: Any) -> dict[str, Any]:
    """An order whose ``pricing`` subprocess gets its own ``discount`` and a shadowing
    ``total``; the body reads them, routes on them and sets some; ``after`` runs outside."""
    return {
        "key": "scoped_order",
        "nodes": [
            {"id": "start", "type": "startEvent"},
            {
                "id": "pricing",
                "type": "subProcess",
                "inputs": {"total": "${total + 10}", "discount": "${total > 50}", "tag": "inner"},
                **sub_keys,
                "nodes": [
                    {"id": "p_start", "type": "startEvent"},
                    {"id": "price", "type": "serviceTask", "handler": "price"},
                    {"id": "p_route", "type": "exclusiveGateway", "default": "f_p_route_p_low"},
                    {"id": "p_high", "type": "endEvent"},
                    {"id": "p_low", "type": "endEvent"},
                ],
                "flows": [
                    *flows(("p_start", "price"), ("price", "p_route")),
                    {
                        "id": "f_p_route_p_high",
                        "source": "p_route",
                        "target": "p_high",
                        "condition": "${total > 100}",
                    },
                    {"id": "f_p_route_p_low", "source": "p_route", "target": "p_low"},
                ],
            },
            {"id": "after", "type": "serviceTask", "handler": "after"},
            {"id": "end", "type": "endEvent"},
        ],
        "flows": flows(("start", "pricing"), ("pricing", "after"), ("after", "end")),
    }


def locals_of(rt: Harness, iid: UUID) -> dict[str, dict[str, Any]]:
    return {s["node_id"]: s["variables"] for s in rt.engine.show(iid)["local_variables"]}


def assert_replays(rt: Harness, iid: UUID) -> None:
    """History alone rebuilds the instance, local variables included, at this moment."""
    assert replay.check(rt.engine.core, iid) == []
    rebuilt = replay.rebuild(replay.events_of(rt.engine.core, iid))
    assert rebuilt.local_variables == replay.current(rt.engine.core, iid).local_variables


def test_a_subprocess_input_shadows_an_outer_variable_and_ends_with_it(
    lrt: Harness, handlers: HandlerRegistry
) -> None:
    inside = recorder(handlers, "price")
    after = recorder(handlers, "after")
    during: list[dict[str, dict[str, Any]]] = []

    def price(ctx: HandlerContext) -> dict[str, Any]:
        inside.append(dict(ctx.variables))
        during.append(locals_of(lrt, ctx.instance_id))  # no transaction is open meanwhile
        assert_replays(lrt, ctx.instance_id)
        return {}

    handlers.register("price", price, replace=True)
    iid = lrt.run(scoped_order(), {"total": 95})
    assert during == [{"pricing": {"total": 105, "discount": True, "tag": "inner"}}]
    assert inside == [{"total": 105, "discount": True, "tag": "inner"}]
    assert after == [{"total": 95}]  # the outer value again; the scope's own names are gone
    show = lrt.engine.show(iid)
    assert show["state"] == "COMPLETED"
    assert show["local_variables"] == []
    assert show["variables"] == {"total": 95}
    # The gateway inside routed on the shadowing value (105 > 100).
    moves = [e["node_id"] for e in lrt.engine.trace(iid) if e["type"] == "COMPLETED"]
    assert "p_high" in moves and "p_low" not in moves
    events = [e for e in lrt.engine.trace(iid) if e["type"].startswith("LocalVariables")]
    assert [(e["type"], e["node_id"]) for e in events] == [
        ("LocalVariablesSet", "pricing"),
        ("LocalVariablesEnded", "pricing"),
    ]
    assert events[1]["data"] == {"names": ["discount", "tag", "total"]}
    assert_replays(lrt, iid)


def test_a_write_goes_to_the_scope_that_has_the_name_else_to_the_instance(
    lrt: Harness, handlers: HandlerRegistry
) -> None:
    recorder(handlers, "price", {"total": 20, "note": "priced"})
    after = recorder(handlers, "after")
    iid = lrt.run(scoped_order(outputs={"charged": "${total * 2}", "was": "${tag}"}), {"total": 5})
    # total=20 went to the subprocess's own total; note (nowhere yet) to the instance; the
    # output mapping read the inner view and wrote outward.
    assert after == [{"total": 5, "note": "priced", "charged": 40, "was": "inner"}]
    assert lrt.engine.show(iid)["variables"] == {
        "total": 5,
        "note": "priced",
        "charged": 40,
        "was": "inner",
    }
    assert_replays(lrt, iid)


def test_an_output_mapping_writes_to_an_enclosing_scope_that_has_the_name(
    lrt: Harness, handlers: HandlerRegistry
) -> None:
    """A task inside the subprocess maps its result out: into the subprocess's ``total``
    (which shadows the instance's), not the instance."""
    seen_after = recorder(handlers, "after")
    recorder(handlers, "price", {"raw": 7})
    doc = scoped_order(outputs={"final": "${total}"})
    price = doc["nodes"][1]["nodes"][1]
    price["outputs"] = {"total": "${raw * 100}"}
    iid = lrt.run(doc, {"total": 1})
    assert seen_after == [{"total": 1, "raw": 7, "final": 700}]
    assert_replays(lrt, iid)


def test_a_timer_that_interrupts_the_subprocess_ends_its_scope(
    lrt: Harness, handlers: HandlerRegistry
) -> None:
    after = recorder(handlers, "after")
    doc = scoped_order()
    body = doc["nodes"][1]
    body["nodes"][1] = {"id": "price", "type": "userTask"}
    doc["nodes"].append(
        {
            "id": "too_slow",
            "type": "boundaryEvent",
            "attachedTo": "pricing",
            "timer": {"duration": "PT1H"},
        }
    )
    doc["flows"].append({"id": "f_slow", "source": "too_slow", "target": "after"})
    iid = lrt.run(doc, {"total": 1})
    assert locals_of(lrt, iid) == {"pricing": {"total": 11, "discount": False, "tag": "inner"}}
    lrt.pass_time(timedelta(hours=2))
    assert after == [{"total": 1}]
    assert locals_of(lrt, iid) == {}
    ended = [e for e in lrt.engine.trace(iid) if e["type"] == "LocalVariablesEnded"]
    assert [e["node_id"] for e in ended] == ["pricing"]
    assert_replays(lrt, iid)


def test_cancelling_an_instance_ends_its_scopes(lrt: Harness) -> None:
    doc = scoped_order()
    doc["nodes"][1]["nodes"][1] = {"id": "price", "type": "userTask"}
    iid = lrt.run(doc, {"total": 1})
    assert locals_of(lrt, iid) != {}
    lrt.engine.cancel(iid)
    assert locals_of(lrt, iid) == {}
    assert_replays(lrt, iid)


def external_payment() -> dict[str, Any]:
    return {
        "key": "payment",
        "nodes": [
            {"id": "start", "type": "startEvent"},
            {
                "id": "charge",
                "type": "serviceTask",
                "topic": "charge-card",
                "inputs": {"amount": "${order['total']}", "currency": "EUR"},
                "outputs": {"receiptId": "${receipt}", "charged": "${amount}"},
            },
            {"id": "end", "type": "endEvent"},
        ],
        "flows": flows(("start", "charge"), ("charge", "end")),
    }


def test_an_external_task_fetches_its_local_variables_and_completes_locally(
    lrt: Harness,
) -> None:
    iid = lrt.run(external_payment(), {"order": {"total": 42}, "secret": "x"})
    wanted = TopicRequest("charge-card", timedelta(minutes=1), variables=["amount", "currency"])
    [task] = lrt.engine.fetch_and_lock("w1", [wanted])
    assert task.variables == {"amount": 42, "currency": "EUR"}
    assert_replays(lrt, iid)
    lrt.engine.complete(task.id, "w1", {"status": "ok"}, local_variables={"receipt": "r-1"})
    lrt.drain()
    show = lrt.engine.show(iid)
    assert show["state"] == "COMPLETED"
    # ``receipt`` stayed in the task's scope and ended with it; the outputs were copied out.
    assert show["variables"] == {
        "order": {"total": 42},
        "secret": "x",
        "status": "ok",
        "receiptId": "r-1",
        "charged": 42,
    }
    assert show["local_variables"] == []
    assert_replays(lrt, iid)


def test_a_fetch_of_all_variables_sees_the_local_ones_over_the_instances(lrt: Harness) -> None:
    doc = external_payment()
    doc["nodes"][1]["inputs"] = {"order": {"total": "${order['total'] * 2}", "lines": []}}
    doc["nodes"][1]["outputs"] = {}
    lrt.run(doc, {"order": {"total": 3}})
    [task] = lrt.engine.fetch_and_lock("w1", [TopicRequest("charge-card", timedelta(minutes=1))])
    assert task.variables == {"order": {"total": 6, "lines": []}}


def test_a_user_task_completes_with_local_variables_for_its_outputs(lrt: Harness) -> None:
    doc = {
        "key": "review",
        "nodes": [
            {"id": "start", "type": "startEvent"},
            {
                "id": "approve",
                "type": "userTask",
                "inputs": {"limit": 100},
                "outputs": {"approved": "${decision == 'yes' and limit >= 100}"},
            },
            {"id": "end", "type": "endEvent"},
        ],
        "flows": flows(("start", "approve"), ("approve", "end")),
    }
    iid = lrt.run(doc)
    [task] = lrt.engine.user_tasks(instance_id=iid)
    lrt.engine.complete_user_task(
        task["id"], {"comment": "fine"}, local_variables={"decision": "yes"}
    )
    lrt.drain()
    assert lrt.engine.show(iid)["variables"] == {"comment": "fine", "approved": True}
    assert_replays(lrt, iid)


def test_an_input_that_reads_a_missing_variable_fails_the_token_naming_it(
    lrt: Harness, handlers: HandlerRegistry
) -> None:
    recorder(handlers, "price")
    iid = lrt.run(scoped_order(), {"amount": 1})
    [incident] = lrt.engine.incidents()
    assert incident["kind"] == "mapping"
    assert "input mapping of 'pricing'" in incident["message"]
    assert "'total'" in incident["message"]
    assert lrt.engine.show(iid)["state"] == "FAILED"
    assert locals_of(lrt, iid) == {}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ("x", "'inputs' must be an object"),
        ({"1x": "${a}"}, "is not a variable name"),
        ({"x": "${__import__('os')}"}, "input mapping"),
    ],
)
def test_a_bad_mapping_is_refused_at_deploy_naming_the_node(
    pg_db: Database, engine_factory: EngineFactory, inputs: Any, message: str
) -> None:
    doc = scoped_order()
    doc["nodes"][1]["inputs"] = inputs
    with pytest.raises(DefinitionError, match=message) as err:
        engine_factory().engine.deploy(doc)
    assert "pricing" in str(err.value)
