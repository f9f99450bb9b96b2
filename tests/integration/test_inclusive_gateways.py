"""Inclusive gateways on PostgreSQL: a split takes every flow whose condition holds (the
default when none does, an incident when there is none), and a join fires once no live token
of its scope can still reach it, whatever order the branches arrive in."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness

SHARED = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "public"


def split_join(*, default: bool = True) -> dict[str, Any]:
    """Three branches by condition (a, b, c), an optional default (d), then a join."""
    b = (
        ProcessBuilder("incl")
        .start()
        .inclusive_gateway("split", default="split__d" if default else None)
    )
    b.inclusive_gateway("join")
    for name in ("a", "b", "c", "d"):
        if name == "d" and not default:
            continue
        b.service_task(name, handler=name).flow(name, "join")
    b.flow("split", "a", condition="${x > 0}").flow("split", "b", condition="${x > 5}")
    b.flow("split", "c", condition="${x > 10}")
    if default:
        b.flow("split", "d")
    b.service_task("after", handler="after").end()
    return b.sequence("start", "split").sequence("join", "after", "end").build()


@pytest.fixture
def recorded(calls: Calls) -> Calls:
    for name in ("a", "b", "c", "d", "after", "u"):
        calls.add(name)
    return calls


@pytest.mark.parametrize(
    ("x", "taken"),
    [(7, {"a", "b"}), (20, {"a", "b", "c"}), (1, {"a"}), (-1, {"d"})],
)
def test_the_split_takes_every_true_flow_and_the_join_waits_for_them(
    rt: Harness, recorded: Calls, pg_db: Database, x: int, taken: set[str]
) -> None:
    iid = rt.run(split_join(), {"x": x})
    assert {n for n in "abcd" if recorded.count(n)} == taken
    assert recorded.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_no_true_flow_and_no_default_is_an_incident(
    rt: Harness, recorded: Calls, pg_db: Database
) -> None:
    iid = rt.run(split_join(default=False), {"x": -1})
    (incident,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert "no outgoing sequence flow can be taken" in incident.message
    assert "split" in incident.message


def test_the_join_waits_for_a_branch_still_at_work_and_not_for_one_that_cannot_come(
    rt: Harness, recorded: Calls, pg_db: Database
) -> None:
    """Branch a reaches the join at once; branch u waits at a user task that leads to the
    join; branch e goes to an end event. The join fires only after u completes."""
    doc = (
        ProcessBuilder("incl_wait")
        .start()
        .parallel_gateway("fork")
        .service_task("a", handler="a")
        .user_task("approve")
        .service_task("u", handler="u")
        .inclusive_gateway("join")
        .service_task("after", handler="after")
        .end()
        .end("elsewhere")
        .sequence("start", "fork")
        .flow("fork", "a")
        .flow("fork", "approve")
        .flow("fork", "elsewhere")
        .flow("a", "join")
        .sequence("approve", "u", "join")
        .sequence("join", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    assert recorded.count("a") == 1 and recorded.count("after") == 0
    rt.complete_user_task(iid)
    assert recorded.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_branch_that_loops_back_before_the_join_holds_it_until_it_leaves_the_loop(
    rt: Harness, recorded: Calls, pg_db: Database
) -> None:
    """Unstructured: branch b loops through an exclusive gateway twice before it goes on to
    the join; the join must not fire while b can still come."""
    seen: list[int] = []

    def count(ctx: Any) -> dict[str, int]:
        seen.append(1)
        return {"n": len(seen)}

    recorded.add("b", count)
    doc = (
        ProcessBuilder("incl_loop")
        .start()
        .inclusive_gateway("split")
        .service_task("a", handler="a")
        .service_task("b", handler="b")
        .exclusive_gateway("again", default="again__join")
        .inclusive_gateway("join")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "split")
        .flow("split", "a", condition="${go}")
        .flow("split", "b", condition="${go}")
        .flow("a", "join")
        .flow("b", "again")
        .flow("again", "b", condition="${n < 3}")
        .flow("again", "join")
        .sequence("join", "after", "end")
        .build()
    )
    iid = rt.run(doc, {"go": True})
    assert len(seen) == 3 and recorded.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_join_reached_by_one_token_alone_passes_it_on(
    rt: Harness, recorded: Calls, pg_db: Database
) -> None:
    iid = rt.run(split_join(), {"x": 1})  # only a: the join has one token to wait for
    assert recorded.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_arrivals_delivered_twice_fire_the_join_once(
    rt: Harness, recorded: Calls, pg_db: Database
) -> None:
    rt.deploy(split_join())
    iid = rt.start("incl", {"x": 20})
    while (job := rt.queue.pop(rt.clock.peek())) is not None:
        rt.engine.run_job(job)
        rt.engine.run_job(job)  # every job delivered twice
    assert recorded.count("after") == 1
    assert len(rows.engine_events_of(pg_db, iid, type="JoinFired")) == 1
    assert_finished_cleanly(pg_db, iid)


MODELER = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d" targetNamespace="t">
  <bpmn:process id="checks" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:inclusiveGateway id="which" default="f_none" />
    <bpmn:serviceTask id="credit" camunda:delegateExpression="${a}" />
    <bpmn:serviceTask id="fraud" camunda:delegateExpression="${b}" />
    <bpmn:serviceTask id="none" camunda:delegateExpression="${d}" />
    <bpmn:inclusiveGateway id="merge" />
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="which" />
    <bpmn:sequenceFlow id="f_credit" sourceRef="which" targetRef="credit">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${amount &gt; 100}
      </bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f_fraud" sourceRef="which" targetRef="fraud">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${country != 'DE'}
      </bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f_none" sourceRef="which" targetRef="none" />
    <bpmn:sequenceFlow id="g1" sourceRef="credit" targetRef="merge" />
    <bpmn:sequenceFlow id="g2" sourceRef="fraud" targetRef="merge" />
    <bpmn:sequenceFlow id="g3" sourceRef="none" targetRef="merge" />
    <bpmn:sequenceFlow id="g4" sourceRef="merge" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_camunda_modeler_inclusive_gateway(rt: Harness, recorded: Calls, pg_db: Database) -> None:
    rt.engine.deploy_bpmn(MODELER)
    iid = rt.start("checks", {"amount": 500, "country": "FR"})
    rt.drain()
    assert (recorded.count("a"), recorded.count("b"), recorded.count("d")) == (1, 1, 0)
    assert_finished_cleanly(pg_db, iid)
    doc = compile_bpmn(MODELER)[0]
    (which,) = [n for n in doc["nodes"] if n["id"] == "which"]
    assert which == {"id": "which", "type": "inclusiveGateway", "default": "f_none"}


def test_a_branch_that_turns_away_lets_the_join_fire_without_waiting_for_a_scan(
    rt: Harness, recorded: Calls, pg_db: Database
) -> None:
    """Branch one parks at the join first; branch two then takes a path that cannot reach
    it and waits at a user task there. Its turning away is what the join waits for: the
    join fires in the same drain, not at the next scan."""
    doc = (
        ProcessBuilder("incl_turn")
        .start()
        .parallel_gateway("fork")
        .exclusive_gateway("gate", default="gate__stuck")
        .user_task("stuck")
        .end("aside")
        .inclusive_gateway("join")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "fork")
        .flow("fork", "join")
        .flow("fork", "gate")
        .flow("gate", "join", condition="${go}")
        .flow("gate", "stuck")
        .sequence("stuck", "aside")
        .sequence("join", "after", "end")
        .build()
    )
    iid = rt.run(doc, {"go": False})
    assert recorded.count("after") == 1
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)


def test_a_path_a_non_interrupting_boundary_started_is_waited_for_at_the_join(
    rt: Harness, recorded: Calls, pg_db: Database, clock: Any
) -> None:
    """The token at ``act`` is not concurrent, but the path its non-interrupting timer
    started beside it also leads to the inclusive join: the join waits for both."""
    doc = (
        ProcessBuilder("incl_spawn")
        .start()
        .user_task("act")
        .timer_boundary("late", attached_to="act", duration="PT1H", interrupting=False)
        .user_task("follow_up")
        .inclusive_gateway("join")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "act", "join")
        .sequence("late", "follow_up", "join")
        .sequence("join", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(hours=1))
    tasks = {t["node_id"]: t["id"] for t in rt.engine.user_tasks(instance_id=iid)}
    assert set(tasks) == {"act", "follow_up"}
    rt.engine.complete_user_task(tasks["act"])
    rt.drain()
    assert recorded.count("after") == 0  # follow_up can still reach the join
    rt.engine.complete_user_task(tasks["follow_up"])
    rt.drain()
    assert recorded.count("after") == 1
    assert_finished_cleanly(pg_db, iid)
