"""Who may fetch and report: a worker only its topics, a viewer nothing, no credential or a
wrong secret nobody; every refusal is 401 or 403, changes nothing, and is logged."""

from __future__ import annotations

import time

import httpx
import pytest

from bpm.states import Role
from tests.server.conftest import CREDENTIAL_TTL, Server
from tests.server.processes import deploy, start

FETCH = "/external-task/fetchAndLock"


def _fetch(topic: str, worker: str = "w") -> dict[str, object]:
    return {
        "workerId": worker,
        "maxTasks": 5,
        "topics": [{"topicName": topic, "lockDuration": 10000}],
    }


@pytest.fixture(scope="module")
def tasks(server: Server) -> dict[str, str]:
    """One waiting task on topic auth-a and one on auth-b; a worker for each kind of limit."""
    deploy(server.runtime, "auth_a", "auth-a")
    deploy(server.runtime, "auth_b", "auth-b")
    server.add("only-a", Role.WORKER, ("auth-a",))
    server.add("viewer", Role.VIEWER)
    return {"a": start(server.runtime, "auth_a", mode="x"), "b": start(server.runtime, "auth_b")}


def _task_of(server: Server, instance_id: str) -> dict[str, object]:
    with server.client("operator") as c:
        found = c.get("/external-task", params={"processInstanceId": instance_id}).json()
    assert len(found) == 1
    return dict(found[0])


def test_a_worker_limited_to_a_topic_cannot_fetch_another(
    server: Server, tasks: dict[str, str]
) -> None:
    with server.client("only-a") as c:
        refused = c.post(FETCH, json=_fetch("auth-b"))
        both = c.post(
            FETCH,
            json={
                **_fetch("auth-a"),
                "topics": [
                    {"topicName": "auth-a", "lockDuration": 1000},
                    {"topicName": "auth-b", "lockDuration": 1000},
                ],
            },
        )
    assert refused.status_code == 403 and both.status_code == 403
    assert refused.json()["type"] == "AuthorizationException"
    assert refused.headers["content-type"] == "application/json"
    assert _task_of(server, tasks["b"])["workerId"] is None
    assert _task_of(server, tasks["a"])["workerId"] is None  # the mixed request locked nothing
    assert "refused POST /engine-rest/external-task/fetchAndLock" in server.log_text()


def test_a_worker_limited_to_a_topic_cannot_report_on_another(
    server: Server, tasks: dict[str, str]
) -> None:
    with server.client("operator") as c:
        locked = c.post(FETCH, json=_fetch("auth-b", "op-worker")).json()
    assert len(locked) == 1
    task_id = locked[0]["id"]
    with server.client("only-a") as c:
        for path, body in (
            ("complete", {"workerId": "op-worker"}),
            ("failure", {"workerId": "op-worker", "retries": 0}),
            ("bpmnError", {"workerId": "op-worker", "errorCode": "E1"}),
            ("extendLock", {"workerId": "op-worker", "newDuration": 1000}),
        ):
            answer = c.post(f"/external-task/{task_id}/{path}", json=body)
            assert answer.status_code == 403, (path, answer.text)
        assert c.post(f"/external-task/{task_id}/unlock").status_code == 403
    after = _task_of(server, tasks["b"])
    assert after["workerId"] == "op-worker" and after["errorMessage"] is None
    with server.client("operator") as c:
        assert c.post(f"/external-task/{task_id}/unlock").status_code == 204


def test_a_viewer_cannot_fetch_but_can_read(server: Server, tasks: dict[str, str]) -> None:
    with server.client("viewer") as c:
        assert c.post(FETCH, json=_fetch("auth-a")).status_code == 403
        assert c.get("/external-task").status_code == 200
    assert _task_of(server, tasks["a"])["workerId"] is None


def test_no_credential_or_a_wrong_secret_is_401(server: Server, tasks: dict[str, str]) -> None:
    with httpx.Client(base_url=server.base) as c:
        none = c.post(FETCH, json=_fetch("auth-a"))
        wrong = c.post(FETCH, json=_fetch("auth-a"), auth=("only-a", "not-the-secret"))
        unknown = c.post(FETCH, json=_fetch("auth-a"), auth=("nobody", "x"))
        token = c.post(
            FETCH, json=_fetch("auth-a"), headers={"Authorization": "Bearer only-a.nope"}
        )
    for answer in (none, wrong, unknown, token):
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Basic")
        assert answer.json()["type"] == "AuthenticationException"
    assert _task_of(server, tasks["a"])["workerId"] is None
    assert "not-the-secret" not in server.log_text()


def test_a_bearer_token_works_like_basic(server: Server, tasks: dict[str, str]) -> None:
    token = f"only-a.{server.secrets['only-a']}"
    with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}) as c:
        assert c.get("/external-task/" + "0" * 8).status_code == 403  # a worker does not read
        assert c.post(FETCH, json={**_fetch("auth-a"), "maxTasks": 0}).status_code == 200


def test_a_removed_credential_stops_working_within_its_ttl(
    server: Server, tasks: dict[str, str]
) -> None:
    from bpm import credentials

    server.add("short-lived", Role.WORKER)
    with server.client("short-lived") as c:
        assert c.post(FETCH, json={**_fetch("none"), "maxTasks": 0}).status_code == 200
        credentials.remove(server.db, "short-lived")
        time.sleep(float(CREDENTIAL_TTL) + 0.2)
        assert c.post(FETCH, json={**_fetch("none"), "maxTasks": 0}).status_code == 401
