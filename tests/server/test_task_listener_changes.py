"""``GET /task`` over HTTP shows a user task as its ``create`` listener left it: the candidate
group, due date and priority a script set, or the assignee an expression set
(tests/integration has the engine's side)."""

from __future__ import annotations

from tests.integration.test_task_listener_changes import _model, _script_listener, _task_listener
from tests.server.conftest import Server


def test_get_task_shows_what_the_create_listener_set(server: Server) -> None:
    source = (
        "task.addCandidateGroup('accounting');"
        " task.setDueDate('2027-01-31T09:00:00Z'); task.setPriority(80);"
    )
    server.runtime.engine.deploy_bpmn(_model("http_changes", _script_listener("create", source)))
    instance = str(server.runtime.engine.start("http_changes").id)
    server.runtime.run_until_idle(timeout=5)
    with server.client("operator") as c:
        [task] = c.get("/task", params={"processInstanceId": instance}).json()
        by_group = c.get("/task", params={"candidateGroup": "accounting"}).json()
    assert (task["assignee"], task["priority"]) == (None, 80)
    assert task["due"].startswith("2027-01-31T09:00:00")
    assert task["id"] in [t["id"] for t in by_group]


def test_get_task_shows_the_assignee_a_create_listener_set(server: Server) -> None:
    listener = _task_listener("create", "${task.setAssignee('demo')}")
    server.runtime.engine.deploy_bpmn(_model("http_assignee", listener))
    instance = str(server.runtime.engine.start("http_assignee").id)
    server.runtime.run_until_idle(timeout=5)
    with server.client("operator") as c:
        [task] = c.get("/task", params={"processInstanceId": instance}).json()
        mine = c.get("/task", params={"assignee": "demo"}).json()
    assert task["assignee"] == "demo"
    assert task["id"] in [t["id"] for t in mine]
