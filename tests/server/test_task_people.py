"""``/task/{id}/identity-links``, ``/assignee`` and ``/comment`` against a real server: the
candidates and assignee as links, changed by hand with their history; comments kept after
the task ends; roles and processes checked before anything changes."""

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
    server.runtime.engine.deploy_bpmn(review_bpmn("tp_review"))
    server.add("viewer", Role.VIEWER)
    server.add("clerk", Role.STARTER)
    server.add("elsewhere", Role.STARTER, processes=("other",))
    instance = start(server.runtime, "tp_review", "tp-1")
    return {"instance": instance, "task": review_task(server.runtime, instance)}


def _links(server: Server, task: str, **params: str) -> list[dict[str, object]]:
    with server.client("viewer") as c:
        got = c.get(f"/task/{task}/identity-links", params=params)
    assert got.status_code == 200, got.text
    return list(got.json())


def test_links_candidates_and_assignee(server: Server, world: dict[str, str]) -> None:
    task = world["task"]
    assert _links(server, task) == [{"userId": None, "groupId": "clerks", "type": "candidate"}]
    with server.client("clerk") as c:
        add = c.post(f"/task/{task}/identity-links", json={"userId": "bob", "type": "candidate"})
        assert add.status_code == 204, add.text
        assert c.post(f"/task/{task}/assignee", json={"userId": "ann"}).status_code == 204
        # Camunda's setAssignee: no claim check, so another assignee replaces ann.
        assert c.post(f"/task/{task}/assignee", json={"userId": "cid"}).status_code == 204
        gone = c.post(
            f"/task/{task}/identity-links/delete", json={"groupId": "clerks", "type": "candidate"}
        )
        assert gone.status_code == 204
        both = c.post(
            f"/task/{task}/identity-links",
            json={"userId": "x", "groupId": "y", "type": "candidate"},
        )
        assert both.status_code == 400
        owner = c.post(f"/task/{task}/identity-links", json={"userId": "x", "type": "owner"})
        assert owner.status_code == 400 and "owner" in owner.json()["message"]
    assert {(link["userId"], link["groupId"], link["type"]) for link in _links(server, task)} == {
        ("cid", None, "assignee"),
        ("bob", None, "candidate"),
    }
    assert [link["userId"] for link in _links(server, task, type="assignee")] == ["cid"]
    events = [e for e in server.runtime.engine.trace(world["instance"]) if e.get("task_id") == task]
    kinds = [e["type"] for e in events]
    assert kinds.count("CLAIMED") == 2 and kinds.count("UPDATED") == 2
    with server.client("viewer") as c:
        refused = c.post(f"/task/{task}/assignee", json={"userId": "eve"})
        assert refused.status_code == 403
    with server.client("elsewhere") as c:
        assert c.post(f"/task/{task}/assignee", json={"userId": "eve"}).status_code == 403
    assert [link["userId"] for link in _links(server, task, type="assignee")] == ["cid"]


def test_comments_outlive_their_task(server: Server, world: dict[str, str]) -> None:
    instance = start(server.runtime, "tp_review", "tp-2")
    task = review_task(server.runtime, instance)
    with server.client("clerk") as c:
        made = c.post(f"/task/{task}/comment/create", json={"message": "Checked the address"})
        assert made.status_code == 200, made.text
        comment = made.json()
        assert comment["userId"] == "clerk" and comment["processInstanceId"] == instance
        empty = c.post(f"/task/{task}/comment/create", json={"message": ""})
        assert empty.status_code == 400
        wrong = c.post(
            f"/task/{task}/comment/create",
            json={"message": "x", "processInstanceId": world["instance"]},
        )
        assert wrong.status_code == 400
    server.runtime.engine.complete_user_task(task, {"approved": True, "amount": 1})
    server.runtime.run_until_idle(timeout=5)
    with server.client("viewer") as c:
        assert c.get(f"/task/{task}/comment").json() == [comment]
        assert c.get(f"/task/{task}/comment/{comment['id']}").json() == comment
        assert c.post(f"/task/{task}/comment/create", json={"message": "late"}).status_code == 403
    with server.client("clerk") as c:
        late = c.post(f"/task/{task}/comment/create", json={"message": "late"})
        assert late.status_code == 404
