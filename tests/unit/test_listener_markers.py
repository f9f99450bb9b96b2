"""The marker a listener's handler task carries in its topic: which listener it runs, the user
task a listener beside it changes, and whether it carries the task being created. Markers
written before those were added still read (as listeners that change no task)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from uuid import uuid4

from bpm.definitions.assignments import Assigned
from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.parse import compile_definition
from bpm.engine.semantics import listeners
from bpm.states import TaskKind, TaskState
from bpm.store.rows import TaskRow
from tests.helpers.modeler import chain, modeler_file

NOW = datetime(2026, 3, 14, tzinfo=UTC)
LISTENERS = "".join(
    f'<camunda:taskListener expression="${{true}}" event="{event}" />'
    for event in ("create", "assignment", "update")
)
BODY = (
    '<bpmn:startEvent id="S" />'
    f'<bpmn:userTask id="T"><bpmn:extensionElements>{LISTENERS}</bpmn:extensionElements>'
    "</bpmn:userTask>"
    '<bpmn:endEvent id="E" />' + chain("S", "T", "E")
)


def _task(topic: str) -> TaskRow:
    return TaskRow(
        uuid4(), uuid4(), uuid4(), "T", topic, "bpm:expression", TaskKind.HANDLER,
        TaskState.LOCKED, 0, 1, None, None, None, None, None, 0, 1, NOW, NOW,
    )  # fmt: skip


def test_markers_name_the_listener_its_task_and_what_it_carries() -> None:
    [doc] = compile_bpmn(modeler_file("markers", BODY))
    g = compile_definition(doc)
    user_task = uuid4()
    created = listeners.step_of(g, _task("listener:create:0:="))
    assert created is not None and created.creating and created.carries
    old = listeners.step_of(g, _task("listener:assignment:0"))
    assert old is not None and old.creating and not old.carries
    beside = listeners.step_of(g, _task(f"listener:update:0:+assignment@{user_task}"))
    assert beside is not None and not beside.creating
    assert beside.user_task == user_task and beside.then is not None
    older = listeners.step_of(g, _task("listener:update:0:+assignment"))
    assert older is not None and older.user_task is None


def test_a_creation_listener_task_carries_the_task_to_be_in_its_columns() -> None:
    who = Assigned("ann", ["kim"], ["sales"], NOW, None, 70)
    task = replace(
        _task("listener:create:0:="),
        assignee="ann",
        candidate_users=["kim"],
        candidate_groups=["sales"],
        due_date=NOW,
        priority=70,
    )
    assert listeners.carried(task) == who


def test_the_process_end_listener_markers_as_it_ends_and_as_it_is_cancelled() -> None:
    own = (
        '<bpmn:extensionElements><camunda:executionListener event="end" expression="${true}" />'
        '<camunda:executionListener event="end" class="org.acme.Audit" /></bpmn:extensionElements>'
    )
    [doc] = compile_bpmn(modeler_file("markers", own + BODY))
    g = compile_definition(doc)
    ending = listeners.step_of(g, _task("listener:end:1:^process"))
    assert ending is not None and ending.process and not ending.cancelling
    assert ending.listener is g.end_listeners[1] and not ending.creating
    cancelling = listeners.step_of(g, _task("listener:end:0:^cancelling"))
    assert cancelling is not None and cancelling.process and cancelling.cancelling
