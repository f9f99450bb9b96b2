"""``bpm tasks``, ``bpm show`` and ``bpm complete`` with a Camunda Modeler user task that has
a form, people from expressions and a due date (SQLite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cli.conftest import Bpm
from tests.helpers.modeler import chain, modeler_file

REVIEW = modeler_file(
    "leave",
    '    <bpmn:startEvent id="S" camunda:initiator="initiator" />\n'
    '    <bpmn:userTask id="review" camunda:assignee="${initiator}"\n'
    '        camunda:candidateUsers="${approvers}" camunda:dueDate="P2D" camunda:priority="70"\n'
    '        camunda:formKey="embedded:app:forms/review.html">\n'
    "      <bpmn:extensionElements><camunda:formData>\n"
    '        <camunda:formField id="days" type="long"><camunda:validation>\n'
    '          <camunda:constraint name="required" />\n'
    '          <camunda:constraint name="max" config="30" />\n'
    "        </camunda:validation></camunda:formField>\n"
    "      </camunda:formData></bpmn:extensionElements>\n"
    "    </bpmn:userTask>\n"
    '    <bpmn:endEvent id="E" />\n' + chain("S", "review", "E"),
)


def started(bpm: Bpm, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "leave.bpmn"
    path.write_text(REVIEW)
    bpm.ok("deploy", str(path))
    doc = bpm.json("start", "leave", "--var", "initiator=ann", "--var", 'approvers=["bob","carol"]')
    assert isinstance(doc, dict)
    tasks = bpm.json("tasks", "--candidate-user", "carol")
    assert isinstance(tasks, list) and len(tasks) == 1
    task: dict[str, Any] = tasks[0]
    return task


def test_tasks__list_by_candidate_user_with_form_priority_and_due_date(
    bpm: Bpm, tmp_path: Path
) -> None:
    task = started(bpm, tmp_path)
    assert (task["assignee"], task["candidate_users"], task["priority"]) == (
        "ann",
        ["bob", "carol"],
        70,
    )
    assert task["form"]["key"] == "embedded:app:forms/review.html" and task["due_date"]
    assert bpm.json("tasks", "--candidate-user", "dave") == []
    out = bpm.ok("tasks", "--candidate-user", "bob").stdout
    header, row = out.splitlines()[:2]
    assert "candidate users" in header and "priority" in header and "form" in header
    assert "bob, carol" in row and "70" in row and "embedded:app:forms/review.html" in row
    assert "fields days*" in row  # * marks a required field
    shown = bpm.ok("show", task["instance_id"]).stdout
    users = shown.split("\nuser tasks\n")[1].split("\n\n")[0]
    assert "bob, carol" in users and "embedded:app:forms/review.html" in users


def test_complete__refuses_a_submission_that_breaks_the_form(bpm: Bpm, tmp_path: Path) -> None:
    task = started(bpm, tmp_path)
    result = bpm("complete", task["id"], "--var", "days=31")
    assert result.exit_code != 0
    assert "field 'days' must be at most 30 (max), got 31" in result.stderr
    assert bpm.json("tasks", "--candidate-user", "bob") != []  # still open
    done = bpm.json("complete", task["id"], "--var", "days=3", "--json")
    assert isinstance(done, dict) and done["state"] == "COMPLETED"


START_FORM = modeler_file(
    "order",
    '    <bpmn:startEvent id="S"><bpmn:extensionElements><camunda:formData businessKey="ref">\n'
    '        <camunda:formField id="ref"><camunda:validation>\n'
    '          <camunda:constraint name="required" />\n'
    "        </camunda:validation></camunda:formField>\n"
    "      </camunda:formData></bpmn:extensionElements></bpmn:startEvent>\n"
    '    <bpmn:endEvent id="E" />\n' + chain("S", "E"),
)


def test_start__with_form_submits_the_start_form_and_without_checks_nothing(
    bpm: Bpm, tmp_path: Path
) -> None:
    path = tmp_path / "order.bpmn"
    path.write_text(START_FORM)
    bpm.ok("deploy", str(path))
    assert "field 'ref' is required" in bpm.error("start", "order", "--form")
    doc = bpm.json("start", "order", "--form", "--var", "ref=PO-7")
    assert isinstance(doc, dict) and doc["business_key"] == "PO-7"
    plain = bpm.json("start", "order")
    assert isinstance(plain, dict) and plain["state"] == "COMPLETED"
