"""``/history/task`` and ``/history/detail`` against a real server: user tasks open, completed
and cancelled with Camunda's delete reasons; each variable change of an instance with its
revision, a removal included."""

from __future__ import annotations

import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.ops_processes import (  # noqa: F401 (a fixture)
    review_bpmn,
    review_task,
    server_imports_the_handlers,
    start,
)


@pytest.fixture(scope="module")
def world(server: Server) -> dict[str, str]:
    rt, engine = server.runtime, server.runtime.engine
    engine.deploy_bpmn(review_bpmn("hd_review"))
    server.add("viewer", Role.VIEWER)
    done = start(rt, "hd_review", "hd-done", amount=1)
    engine.claim(review_task(rt, done), "ann")
    engine.complete_user_task(review_task(rt, done), {"approved": True, "amount": 2})
    rt.run_until_idle(timeout=5)
    cancelled = start(rt, "hd_review", "hd-cancelled")
    engine.cancel(cancelled)
    open_ = start(rt, "hd_review", "hd-open", amount=1)
    engine.set_variables(open_, {"amount": 3})
    engine.set_variables(open_, deletions=["orderId"])
    return {"done": done, "cancelled": cancelled, "open": open_}


def _get(server: Server, path: str, **params: str) -> list[dict[str, object]]:
    with server.client("viewer") as c:
        got = c.get(path, params=params)
    assert got.status_code == 200, got.text
    return list(got.json())


def test_task_history_open_and_ended(server: Server, world: dict[str, str]) -> None:
    by_instance = {
        t["processInstanceId"]: t
        for t in _get(server, "/history/task", processDefinitionKey="hd_review")
    }
    done, cancelled, open_ = (by_instance[world[k]] for k in ("done", "cancelled", "open"))
    assert done["deleteReason"] == "completed" and done["taskState"] == "Completed"
    assert done["assignee"] == "ann" and done["endTime"] and isinstance(done["duration"], int)
    assert done["name"] == "Review order" and done["taskDefinitionKey"] == "review"
    assert cancelled["deleteReason"] == "deleted" and cancelled["endTime"]
    assert open_["deleteReason"] is None and open_["endTime"] is None
    assert open_["taskState"] == "Created"
    finished = _get(server, "/history/task", processDefinitionKey="hd_review", finished="true")
    assert {t["processInstanceId"] for t in finished} == {world["done"], world["cancelled"]}
    mine = _get(server, "/history/task", taskAssignee="ann", processDefinitionKey="hd_review")
    assert [t["id"] for t in mine] == [done["id"]]
    with server.client("viewer") as c:
        body = {"processInstanceIdIn": [world["done"], world["open"]], "unfinished": True}
        assert c.post("/history/task/count", json=body).json() == {"count": 1}


def test_variable_updates_with_revisions(server: Server, world: dict[str, str]) -> None:
    found = _get(server, "/history/detail", processInstanceId=world["open"])
    changes = [(d["variableName"], d["value"], d["revision"], d["initial"]) for d in found]
    assert ("amount", 3, 2, False) in changes and ("orderId", "A1", 1, True) in changes
    removed = [d for d in found if d["variableName"] == "orderId" and d["revision"] == 2]
    assert removed and removed[0]["variableType"] == "Null" and removed[0]["value"] is None
    assert all(d["type"] == "variableUpdate" for d in found)
    amount = _get(server, "/history/detail", processInstanceId=world["open"], variableName="amount")
    assert [d["revision"] for d in amount] == [1, 2]
    with server.client("viewer") as c:
        count = c.get("/history/detail/count", params={"processInstanceId": world["open"]})
        assert count.json() == {"count": len(found)}
        missing = c.get("/history/detail")
        assert missing.status_code == 400 and "processInstanceId" in missing.json()["message"]
        forms = c.get(
            "/history/detail", params={"processInstanceId": world["open"], "formFields": "true"}
        )
        assert forms.json() == []
