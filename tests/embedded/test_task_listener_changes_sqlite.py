"""A task listener's task changes in embedded mode on SQLite: the same engine code as on
PostgreSQL (tests/integration/test_task_listener_changes.py)."""

from __future__ import annotations

from bpm.embedded import EmbeddedRuntime
from tests.integration.test_task_listener_changes import _model, _script_listener, _task_listener


def test_creation_and_claim_listeners_change_the_task_on_sqlite(
    embedded: EmbeddedRuntime,
) -> None:
    engine = embedded.engine
    create = "task.setAssignee('demo'); task.addCandidateGroup('ops'); task.setPriority(70);"
    engine.deploy_bpmn(
        _model(
            "sqlite_changes",
            _script_listener("create", create),
            _task_listener("update", "${task.setDueDate('2027-01-31T09:00:00Z')}"),
            _task_listener("assignment", "${task.deleteCandidateGroup('ops')}"),
        )
    )
    iid = engine.start("sqlite_changes").id
    embedded.run_until_idle(timeout=1)
    [task] = engine.user_tasks(instance_id=iid)
    assert (task["assignee"], task["priority"]) == ("demo", 70)
    assert task["candidate_groups"] == []  # the assignment listener after create removed it
    engine.unclaim(task["id"])
    engine.claim(task["id"], "ann")
    embedded.run_until_idle(timeout=1)
    [task] = engine.user_tasks(instance_id=iid)
    assert task["assignee"] == "ann"
    assert task["due_date"] is not None and task["due_date"].startswith("2027-01-31T09:00")
