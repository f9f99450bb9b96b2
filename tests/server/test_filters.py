"""``/filter`` against a real server: a saved task query made, listed, run with the caller
as ``currentUser()``, narrowed by the request's body, changed by its owner only, deleted."""

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
    rt = server.runtime
    rt.engine.deploy_bpmn(review_bpmn("fl_review"))
    server.add("viewer", Role.VIEWER)
    server.add("clerk", Role.STARTER)
    server.add("other", Role.STARTER)
    tasks = [review_task(rt, start(rt, "fl_review", f"fl-{n}")) for n in range(3)]
    rt.engine.set_assignee(tasks[0], "viewer")
    return {"mine": tasks[0], "open": tasks[1]}


def test_a_filter_runs_as_a_task_query(server: Server, world: dict[str, str]) -> None:
    with server.client("clerk") as c:
        made = c.post(
            "/filter/create",
            json={
                "resourceType": "Task",
                "name": "My tasks",
                "owner": "clerk",
                "query": {"assignee": "${currentUser()}", "processDefinitionKey": "fl_review"},
                "properties": {"color": "#555555", "priority": 1},
            },
        )
        assert made.status_code == 200, made.text
        fid = made.json()["id"]
        group = c.post(
            "/filter/create",
            json={
                "name": "Clerks",
                "query": {"candidateGroup": "clerks", "processDefinitionKey": "fl_review"},
            },
        ).json()["id"]
    with server.client("viewer") as c:
        listed = c.get("/filter", params={"nameLike": "My%"}).json()
        assert [f["id"] for f in listed] == [fid] and listed[0]["properties"]["priority"] == 1
        # The viewer runs it: currentUser() is the viewer, who has the first task.
        assert [t["id"] for t in c.get(f"/filter/{fid}/list").json()] == [world["mine"]]
        assert c.get(f"/filter/{fid}/count").json() == {"count": 1}
        assert c.get(f"/filter/{fid}", params={"itemCount": "true"}).json()["itemCount"] == 1
        assert c.get(f"/filter/{group}/count").json() == {"count": 2}
        narrowed = c.post(f"/filter/{group}/list", json={"processInstanceBusinessKey": "fl-1"})
        assert [t["id"] for t in narrowed.json()] == [world["open"]]
        assert c.get("/filter/count", params={"owner": "clerk"}).json() == {"count": 1}
        assert c.post("/filter/create", json={"name": "x", "query": {}}).status_code == 403


def test_only_the_owner_changes_a_filter(server: Server, world: dict[str, str]) -> None:
    with server.client("clerk") as c:
        fid = c.post(
            "/filter/create",
            json={"name": "Mine", "owner": "clerk", "query": {"assignee": "clerk"}},
        ).json()["id"]
        bad = c.post("/filter/create", json={"name": "Odd", "resourceType": "Case", "query": {}})
        assert bad.status_code == 400
        expr = c.post("/filter/create", json={"name": "Late", "query": {"dueBefore": "${now()}"}})
        fid_expr = expr.json()["id"]
    with server.client("viewer") as c:
        refused = c.get(f"/filter/{fid_expr}/list")
        assert refused.status_code == 400 and "currentUser()" in refused.json()["message"]
    with server.client("other") as c:
        assert c.put(f"/filter/{fid}", json={"name": "Hers", "query": {}}).status_code == 403
        assert c.delete(f"/filter/{fid}").status_code == 403
    with server.client("clerk") as c:
        assert (
            c.put(
                f"/filter/{fid}", json={"name": "Renamed", "owner": "clerk", "query": {}}
            ).status_code
            == 204
        )
        assert c.delete(f"/filter/{fid}").status_code == 204
    with server.client("viewer") as c:
        assert c.get(f"/filter/{fid}").status_code == 404
