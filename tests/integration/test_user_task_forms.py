"""User tasks as Camunda Modeler draws them, on PostgreSQL: a start form, a review form with
constraints, people and dates from expressions, listing by candidate user, and refused
submissions that change nothing."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import FormInvalid, InvalidDefinition
from tests.helpers import db as rows
from tests.helpers.invariants import snapshot
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness

START_FORM = """
    <bpmn:startEvent id="S" camunda:initiator="initiator"
        camunda:formKey="embedded:app:forms/leave.html">
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="reason" label="Reason" type="string">
            <camunda:validation>
              <camunda:constraint name="maxlength" config="40" />
            </camunda:validation>
          </camunda:formField>
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:startEvent>"""
REVIEW = """
    <bpmn:userTask id="review" name="Review leave" camunda:assignee="${initiator}"
        camunda:candidateUsers="${approvers}" camunda:candidateGroups="hr, ${team}"
        camunda:dueDate="${due}" camunda:followUpDate="P1D" camunda:priority="${urgency}"
        camunda:formKey="camunda-forms:deployment:review.form">
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="kind" label="Kind" type="enum" defaultValue="annual">
            <camunda:validation><camunda:constraint name="required" /></camunda:validation>
            <camunda:value id="annual" name="Annual leave" />
            <camunda:value id="sick" name="Sick leave" />
          </camunda:formField>
          <camunda:formField id="days" label="Days" type="long">
            <camunda:properties>
              <camunda:property id="unit" value="working days" />
            </camunda:properties>
            <camunda:validation>
              <camunda:constraint name="required" />
              <camunda:constraint name="min" config="1" />
              <camunda:constraint name="max" config="30" />
            </camunda:validation>
          </camunda:formField>
          <camunda:formField id="first_day" label="First day" type="date" />
          <camunda:formField id="requester" label="Requester" type="string"
              defaultValue="${initiator}">
            <camunda:validation><camunda:constraint name="readonly" /></camunda:validation>
          </camunda:formField>
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:userTask>"""
LEAVE = modeler_file(
    "leave",
    START_FORM + REVIEW + '\n    <bpmn:endEvent id="E" />\n' + chain("S", "review", "E"),
)
START_VARIABLES = {
    "approvers": ["bob", "carol"],
    "team": "ops",
    "due": "2027-03-01T12:00:00Z",
    "urgency": 80,
}


def review_task(rt: Harness, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    rt.engine.deploy_bpmn(LEAVE)
    iid = rt.engine.start("leave", variables or START_VARIABLES, user="ann", submit_form=True).id
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    return task


def test_the_task_is_created_with_its_people_dates_priority_and_form(rt: Harness) -> None:
    task = review_task(rt)
    assert task["assignee"] == "ann"
    assert task["candidate_users"] == ["bob", "carol"]
    assert task["candidate_groups"] == ["hr", "ops"]
    assert task["due_date"] == "2027-03-01T12:00:00+00:00"
    created = datetime.fromisoformat(task["created_at"])
    assert task["follow_up_date"] == (created + timedelta(days=1)).isoformat()
    assert task["priority"] == 80
    form = task["form"]
    assert form["key"] == "camunda-forms:deployment:review.form"
    fields = {f["id"]: f for f in form["fields"]}
    assert fields["requester"]["defaultValue"] == "ann"  # evaluated when the task was created
    assert fields["days"]["validation"] == {"required": True, "min": 1, "max": 30}
    assert fields["days"]["properties"] == {"unit": "working days"}
    assert [v["id"] for v in fields["kind"]["values"]] == ["annual", "sick"]
    [created_row] = rows.task_events_of(rt.engine.db, UUID(task["instance_id"]))
    assert created_row["data"]["candidate_users"] == ["bob", "carol"]


def test_tasks_list_by_candidate_user_and_group(rt: Harness) -> None:
    task = review_task(rt)
    assert [t["id"] for t in rt.engine.user_tasks(candidate_user="carol")] == [task["id"]]
    assert rt.engine.user_tasks(candidate_user="dave") == []
    assert [t["id"] for t in rt.engine.user_tasks(group="ops")] == [task["id"]]
    rt.engine.unclaim(task["id"])
    rt.engine.claim(task["id"], "dave")  # anyone may claim an unclaimed task
    assert [t["assignee"] for t in rt.engine.user_tasks(candidate_user="bob")] == ["dave"]


@pytest.mark.parametrize(
    ("submitted", "problem"),
    [
        ({"kind": "annual"}, "field 'days' is required (required)"),
        ({"kind": "annual", "days": "3"}, "field 'days' must be a whole number (long), got \"3\""),
        ({"kind": "annual", "days": 0}, "field 'days' must be at least 1 (min), got 0"),
        ({"kind": "annual", "days": 31}, "field 'days' must be at most 30 (max), got 31"),
        ({"kind": "unpaid", "days": 2}, "field 'kind' must be one of annual, sick (enum)"),
        (
            {"kind": "annual", "days": 2, "first_day": "2027-03-01"},
            "field 'first_day' must be a date in the pattern dd/MM/yyyy (date)",
        ),
        (
            {"kind": "annual", "days": 2, "requester": "bob"},
            'field \'requester\' is readonly (readonly): the form shows "ann", got "bob"',
        ),
    ],
)
def test_a_submission_that_breaks_the_form_is_refused_and_changes_nothing(
    rt: Harness, submitted: dict[str, Any], problem: str
) -> None:
    task = review_task(rt)
    db = rt.engine.db
    before = snapshot(db)
    with pytest.raises(FormInvalid) as info:
        rt.engine.complete_user_task(task["id"], submitted, user="ann")
    assert problem in str(info.value)
    assert f"completing user task {task['id']} ('review') breaks its form" in str(info.value)
    assert snapshot(db) == before  # task open, variables and history as they were
    assert [t["state"] for t in rt.engine.user_tasks(instance_id=task["instance_id"])] == ["READY"]


def test_every_problem_is_named_at_once(rt: Harness) -> None:
    task = review_task(rt)
    with pytest.raises(FormInvalid) as info:
        rt.engine.complete_user_task(task["id"], {"kind": "x", "days": 99})
    assert len(info.value.problems) == 2 and info.value.name == "kind"


def test_a_good_submission_completes_with_defaults_and_extra_variables(rt: Harness) -> None:
    task = review_task(rt)
    rt.engine.complete_user_task(
        task["id"],
        {"kind": "sick", "days": 3, "first_day": "01/03/2027", "note": "not in the form"},
        user="ann",
    )
    rt.drain()
    shown = rt.engine.show(task["instance_id"])
    assert shown["state"] == "COMPLETED"
    variables = shown["variables"]
    assert variables["requester"] == "ann"  # not submitted: the default the form showed
    assert (variables["kind"], variables["days"]) == ("sick", 3)
    assert variables["note"] == "not in the form"  # not in the form: written unchecked


def test_a_default_does_not_meet_required(rt: Harness) -> None:
    task = review_task(rt)  # kind shows "annual", but nobody chose it
    with pytest.raises(FormInvalid, match="field 'kind' is required"):
        rt.engine.complete_user_task(task["id"], {"days": 3})


def test_a_required_field_already_set_need_not_be_submitted(rt: Harness) -> None:
    task = review_task(rt, {**START_VARIABLES, "days": 4, "kind": "sick"})
    rt.engine.complete_user_task(task["id"], {})
    rt.drain()
    assert rt.engine.show(task["instance_id"])["state"] == "COMPLETED"


def test_a_start_form_checks_the_start_variables(rt: Harness) -> None:
    rt.engine.deploy_bpmn(LEAVE)
    before = snapshot(rt.engine.db)
    with pytest.raises(FormInvalid, match="starting 'leave' breaks its form"):
        rt.engine.start("leave", {**START_VARIABLES, "reason": "x" * 41}, submit_form=True)
    assert snapshot(rt.engine.db) == before
    # A plain start is not a form submission: Camunda's startProcessInstanceByKey checks
    # nothing either.
    plain = rt.engine.start("leave", {**START_VARIABLES, "reason": "x" * 41})
    assert "days" not in rt.engine.show(plain.id)["variables"]
    view = rt.engine.definition("leave")
    start = next(n for n in view["nodes"] if n["id"] == "S")
    assert start["form"]["key"] == "embedded:app:forms/leave.html"
    review = next(n for n in view["nodes"] if n["id"] == "review")
    assert review["candidate_users"] == ["${approvers}"] and "form" in review


def test_an_expression_that_fails_is_an_incident_naming_the_task_and_attribute(
    rt: Harness,
) -> None:
    rt.engine.deploy_bpmn(LEAVE)
    iid = rt.engine.start("leave", {**START_VARIABLES, "due": None} | {"urgency": "high"}).id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "FAILED"
    [incident] = shown["incidents"]
    assert "node 'review' (userTask): 'priority' gave 'high'" in incident["message"]
    other = rt.engine.start("leave", {"approvers": [], "due": None, "urgency": 1}).id
    rt.drain()
    [incident] = rt.engine.show(other)["incidents"]
    assert "candidate_groups expression" in incident["message"] and "team" in incident["message"]


def test_a_due_date_written_as_a_java_call_is_refused_saying_what_to_write() -> None:
    """Camunda's ``dateTime().plusDays(2).toDate()`` runs (an allowlisted call); a call
    outside the allowlist is refused, naming the attribute and what to write."""
    body = (
        '    <bpmn:startEvent id="S" />\n'
        '    <bpmn:userTask id="T" camunda:dueDate="{due}" />\n'
        '    <bpmn:endEvent id="E" />\n' + chain("S", "T", "E")
    )
    [doc] = compile_bpmn(modeler_file("p", body.format(due="${dateTime().plusDays(2).toDate()}")))
    assert next(n for n in doc["nodes"] if n["id"] == "T")["due_date"] == (
        "${dateTime().plusDays(2).toDate()}"
    )
    with pytest.raises(InvalidDefinition) as info:
        compile_bpmn(modeler_file("p", body.format(due="${dateTime().toGregorianCalendar()}")))
    message = str(info.value)
    assert "camunda:dueDate='${dateTime().toGregorianCalendar()}'" in message
    assert "write an ISO 8601 duration such as P2D" in message


def test_a_start_forms_business_key_field_names_the_instance_and_starts_it_once(
    rt: Harness,
) -> None:
    """Camunda's ``camunda:formData businessKey``: the field's value is the business key,
    and starting again with it returns the instance it started."""
    keyed = LEAVE.replace("<camunda:formData>", '<camunda:formData businessKey="reason">', 1)
    rt.engine.deploy_bpmn(keyed)
    first = rt.engine.start("leave", {**START_VARIABLES, "reason": "wedding"}, submit_form=True)
    assert first.business_key == "wedding"
    again = rt.engine.start("leave", {**START_VARIABLES, "reason": "wedding"}, submit_form=True)
    assert again.id == first.id
    assert (
        rt.engine.start(
            "leave", {**START_VARIABLES, "reason": "x"}, business_key="given", submit_form=True
        ).business_key
        == "given"
    )
    with pytest.raises(InvalidDefinition, match="'businessKey' must name one of its fields"):
        compile_bpmn(
            LEAVE.replace("<camunda:formData>", '<camunda:formData businessKey="nope">', 1)
        )
