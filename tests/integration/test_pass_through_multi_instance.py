"""A multi-instance task or manual task: Camunda 7 runs each iteration, which passes at once,
so the activity is done in the step it starts; a collection's elements and ``loopCounter``
are seen by each iteration, and a completion condition is honoured."""

from __future__ import annotations

from uuid import UUID

import pytest

from bpm.store import Database
from tests.helpers.invariants import assert_history_consistent
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness


def model(kind: str, loop: str) -> str:
    return modeler_file(
        "mi",
        '    <bpmn:startEvent id="S" />\n'
        f'    <bpmn:{kind} id="Pack" name="Pack each parcel">{loop}</bpmn:{kind}>\n'
        '    <bpmn:userTask id="After" />\n'
        '    <bpmn:endEvent id="E" />\n' + chain("S", "Pack", "After", "E"),
    )


def iterations(rt: Harness, iid: UUID) -> int:
    """How many iterations of ``Pack`` completed."""
    events = rt.engine.history(instance_id=iid)
    return len([e for e in events if e["type"] == "COMPLETED" and e.get("node_id") == "Pack"])


@pytest.mark.parametrize("kind", ["manualTask", "task"])
@pytest.mark.parametrize("sequential", ["true", "false"])
def test_every_iteration_passes_and_the_activity_goes_on(
    rt: Harness, pg_db: Database, kind: str, sequential: str
) -> None:
    loop = (
        f'<bpmn:multiInstanceLoopCharacteristics isSequential="{sequential}" '
        'camunda:collection="${parcels}" camunda:elementVariable="parcel" />'
    )
    rt.engine.deploy_bpmn(model(kind, loop))
    iid = rt.engine.start("mi", {"parcels": ["a", "b", "c"]}).id
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    assert task["node_id"] == "After"
    assert iterations(rt, iid) == 3
    rt.complete_user_task(iid)
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert "parcel" not in shown["variables"] and "loopCounter" not in shown["variables"]
    assert_history_consistent(pg_db, iid)


def test_a_completion_condition_ends_the_iterations_early(rt: Harness) -> None:
    loop = (
        '<bpmn:multiInstanceLoopCharacteristics isSequential="true">'
        "<bpmn:loopCardinality>5</bpmn:loopCardinality>"
        "<bpmn:completionCondition>${loopCounter >= 1}</bpmn:completionCondition>"
        "</bpmn:multiInstanceLoopCharacteristics>"
    )
    rt.engine.deploy_bpmn(model("manualTask", loop))
    iid = rt.engine.start("mi").id
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    assert task["node_id"] == "After"
    assert iterations(rt, iid) == 2  # loopCounter 0, then 1 meets the condition
