"""Task listeners change their user task as Camunda 7's ``DelegateTask`` does, on PostgreSQL:
a ``create`` listener's changes are the task as it appears (and its new assignee fires the
``assignment`` listeners after it), a script sets dates, priority and candidates, later
listeners edit the open task under its version with history, once per delivery, and a bad
call is an incident that changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from bpm.beans import BeanRegistry
from bpm.engine.operations import replay
from bpm.task_view import TaskView
from tests.helpers.clock import FakeClock
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import EngineFactory, Harness


def _task_listener(event: str, expression: str) -> str:
    return f'<camunda:taskListener expression="{expression}" event="{event}" />'


def _script_listener(event: str, source: str) -> str:
    return (
        f'<camunda:taskListener event="{event}">'
        f'<camunda:script scriptFormat="javascript">{source}</camunda:script>'
        f"</camunda:taskListener>"
    )


def _model(key: str, *listeners: str, attrs: str = "") -> str:
    body = (
        '<bpmn:startEvent id="StartEvent_1" />'
        f'<bpmn:userTask id="Activity_review" name="Review" {attrs}>'
        f"<bpmn:extensionElements>{''.join(listeners)}</bpmn:extensionElements>"
        "</bpmn:userTask>"
        '<bpmn:endEvent id="EndEvent_1" />' + chain("StartEvent_1", "Activity_review", "EndEvent_1")
    )
    return modeler_file(key, body)


def _only_task(rt: Harness, iid: UUID) -> dict[str, Any]:
    [task] = rt.engine.user_tasks(instance_id=iid)
    return task


def _task_rows(rt: Harness, iid: UUID, task_id: str, type: str) -> list[dict[str, Any]]:
    rows = rt.engine.history(instance_id=iid)
    return [r for r in rows if r.get("task_id") == task_id and r["type"] == type]


def test_a_create_listener_assigns_the_task_and_the_assignment_listener_follows(
    rt: Harness,
) -> None:
    rt.engine.deploy_bpmn(
        _model(
            "review",
            _task_listener("create", "${task.setAssignee('demo')}"),
            _task_listener(
                "assignment", "${execution.setVariable('assignedTo', task.getAssignee())}"
            ),
            _task_listener("complete", "${task.setVariable('completedBy', task.getAssignee())}"),
        )
    )
    iid = rt.engine.start("review").id
    rt.drain()
    task = _only_task(rt, iid)
    assert task["assignee"] == "demo"
    assert rt.engine.user_tasks(assignee="demo")[0]["id"] == task["id"]
    assert rt.engine.show(iid)["variables"]["assignedTo"] == "demo"
    [created] = _task_rows(rt, iid, task["id"], "CREATED")
    assert created["data"]["assignee"] == "demo"

    rt.engine.complete_user_task(task["id"], {}, user="demo")
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert shown["variables"]["completedBy"] == "demo"
    assert replay.check(rt.engine.core, iid) == []


def test_a_script_sets_due_date_priority_and_a_candidate_group_seen_by_the_task_query(
    rt: Harness,
) -> None:
    source = (
        "task.setDueDate('2027-01-31T09:00:00Z'); task.setPriority(80);"
        " task.addCandidateGroup('accounting');"
        " task.setFollowUpDate(new Date(Date.UTC(2027, 0, 30)));"
        " execution.setVariable('seen',"
        " task.getPriority() + ':' + task.getCandidateGroups().join());"
    )
    rt.engine.deploy_bpmn(
        _model("dates", _script_listener("create", source), attrs='camunda:candidateGroups="sales"')
    )
    iid = rt.engine.start("dates").id
    rt.drain()
    [task] = rt.engine.user_tasks(group="accounting")
    assert task["instance_id"] == str(iid)
    assert task["priority"] == 80
    assert task["candidate_groups"] == ["sales", "accounting"]
    assert datetime.fromisoformat(task["due_date"]) == datetime(2027, 1, 31, 9, tzinfo=UTC)
    assert datetime.fromisoformat(task["follow_up_date"]) == datetime(2027, 1, 30, tzinfo=UTC)
    assert rt.engine.show(iid)["variables"]["seen"] == "80:sales,accounting"


def test_a_bean_changes_the_task_through_its_delegate(rt: Harness, beans: BeanRegistry) -> None:
    class Escalate:
        def notify(self, task: TaskView) -> None:
            task.addCandidateUser("kim")
            task.setPriority(task.getPriority() + 10)

    beans.register("escalate", Escalate())
    listener = '<camunda:taskListener delegateExpression="${escalate}" event="create" />'
    rt.engine.deploy_bpmn(_model("bean", listener, attrs='camunda:priority="40"'))
    iid = rt.engine.start("bean").id
    rt.drain()
    task = _only_task(rt, iid)
    assert (task["candidate_users"], task["priority"]) == (["kim"], 50)


def _claim_model() -> str:
    return _model(
        "claimed",
        _task_listener("update", "${task.setPriority(90)}"),
        _task_listener("assignment", "${task.addCandidateGroup('reviewers')}"),
    )


def test_listeners_after_a_claim_edit_the_open_task_once_under_duplicate_delivery(
    engine_factory: EngineFactory,
) -> None:
    rt = engine_factory(run_handlers_inline=False)
    rt.engine.deploy_bpmn(_claim_model())
    iid = rt.engine.start("claimed").id
    rt.drain()
    task = _only_task(rt, iid)
    rt.engine.claim(task["id"], "ann")
    [job] = [j for j in rt.queued() if j.name == "bpm.run_handler"]
    listener_task = UUID(str(job.args["task_id"]))
    assert rt.engine.run_handler(listener_task) == "done"
    assert rt.engine.run_handler(listener_task) == "stale"  # the same job, delivered again
    rt.drain()
    edited = _only_task(rt, iid)
    assert (edited["assignee"], edited["priority"]) == ("ann", 90)
    assert edited["candidate_groups"] == ["reviewers"]
    updates = _task_rows(rt, iid, task["id"], "UPDATED")
    assert [u["data"]["changes"] for u in updates] == [
        {"priority": 90},
        {"candidate_groups": ["reviewers"]},
    ]
    assert replay.check(rt.engine.core, iid) == []


def test_a_bad_call_in_a_create_listener_is_an_incident_and_no_task_appears(
    rt: Harness,
) -> None:
    rt.engine.deploy_bpmn(_model("bad", _task_listener("create", "${task.setPriority('high')}")))
    iid = rt.engine.start("bad").id
    rt.drain()
    assert rt.engine.user_tasks(instance_id=iid) == []
    [incident] = rt.engine.show(iid)["incidents"]
    message = incident["message"]
    assert "Activity_review" in message and "create" in message
    assert "task.setPriority('high')" in message and "whole number" in message


def test_a_bad_date_after_a_claim_is_an_incident_and_the_task_is_unchanged(rt: Harness) -> None:
    listener = _script_listener("assignment", "task.setPriority(7); task.setDueDate('not a date');")
    rt.engine.deploy_bpmn(_model("bad_date", listener))
    iid = rt.engine.start("bad_date").id
    rt.drain()
    task = _only_task(rt, iid)
    rt.engine.claim(task["id"], "ann")
    rt.drain()
    after = _only_task(rt, iid)
    assert (after["priority"], after["due_date"]) == (task["priority"], None)
    [incident] = rt.engine.show(iid)["incidents"]
    assert "task.setDueDate('not a date')" in incident["message"]
    assert "Activity_review" in incident["message"]
    assert _task_rows(rt, iid, task["id"], "UPDATED") == []
    assert replay.check(rt.engine.core, iid) == []


def test_a_complete_listener_reassigns_the_done_task_with_a_claimed_row(rt: Harness) -> None:
    listener = _task_listener("complete", "${task.setAssignee('auditor')}")
    rt.engine.deploy_bpmn(_model("audit", listener, attrs='camunda:assignee="ann"'))
    iid = rt.engine.start("audit").id
    rt.drain()
    task = _only_task(rt, iid)
    rt.engine.complete_user_task(task["id"], {}, user="ann")
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
    [claimed] = _task_rows(rt, iid, task["id"], "CLAIMED")
    assert claimed["data"] == {"assignee": "auditor", "was": "ann", "by": "listener"}
    assert replay.check(rt.engine.core, iid) == []


def test_an_assignee_set_by_an_assignment_listener_fires_no_further_assignment(
    rt: Harness,
) -> None:
    source = (
        "execution.setVariable('fired', (execution.getVariable('fired') || 0) + 1);"
        " task.setAssignee('bob');"
    )
    model = _model(
        "reassign", _script_listener("assignment", source), attrs='camunda:assignee="ann"'
    )
    rt.engine.deploy_bpmn(model)
    iid = rt.engine.start("reassign").id
    rt.drain()
    assert _only_task(rt, iid)["assignee"] == "bob"
    assert rt.engine.show(iid)["variables"]["fired"] == 1


def test_a_timeout_listener_escalates_the_open_task(rt: Harness, clock: FakeClock) -> None:
    listener = (
        '<camunda:taskListener event="timeout" id="Escalate">'
        '<camunda:script scriptFormat="javascript">'
        "task.setAssignee('boss'); task.setPriority(task.getPriority() + 40);"
        "</camunda:script>"
        '<bpmn:timerEventDefinition id="TimerEventDefinition_1">'
        '<bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT1H</bpmn:timeDuration>'
        "</bpmn:timerEventDefinition></camunda:taskListener>"
    )
    rt.engine.deploy_bpmn(_model("escalate", listener, attrs='camunda:assignee="ann"'))
    iid = rt.engine.start("escalate").id
    rt.drain()
    task = _only_task(rt, iid)
    clock.advance(timedelta(hours=2))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    escalated = _only_task(rt, iid)
    assert (escalated["id"], escalated["assignee"]) == (task["id"], "boss")
    assert escalated["priority"] == task["priority"] + 40
    [claimed] = _task_rows(rt, iid, task["id"], "CLAIMED")
    assert claimed["data"]["was"] == "ann"
    assert replay.check(rt.engine.core, iid) == []
