"""The report, lock and list endpoints as Camunda answers them: 204 with no body, 404 for an
unknown id, 400 for a worker that does not hold the lock, JSON error bodies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import httpx
import pytest

from tests.server.conftest import Server
from tests.server.processes import deploy, ended_at, start

FETCH = "/external-task/fetchAndLock"


@pytest.fixture(scope="module")
def op(server: Server) -> Iterator[httpx.Client]:
    deploy(server.runtime, "ep", "ep-topic")
    with server.client("operator") as client:
        yield client


def _locked(server: Server, op: httpx.Client, worker: str = "w1") -> tuple[str, dict[str, Any]]:
    key = uuid4().hex
    instance = start(server.runtime, "ep", business_key=key)
    body = {
        "workerId": worker,
        "maxTasks": 1,
        "topics": [{"topicName": "ep-topic", "lockDuration": 60000, "businessKey": key}],
    }
    [task] = [t for t in op.post(FETCH, json=body).json() if t["processInstanceId"] == instance]
    return instance, task


def test_unknown_ids_are_404_in_camundas_shape(server: Server, op: httpx.Client) -> None:
    missing = str(uuid4())
    for answer in (
        op.post(f"/external-task/{missing}/complete", json={"workerId": "w"}),
        op.post(f"/external-task/{missing}/unlock"),
        op.get(f"/external-task/{missing}"),
    ):
        assert answer.status_code == 404
        assert answer.headers["content-type"] == "application/json"
        found = answer.json()
        assert set(found) == {"type", "message", "code"}
        assert found["type"] == "RestException" and found["code"] == 0
        assert missing in found["message"]


def test_another_workers_report_is_400_and_changes_nothing(
    server: Server, op: httpx.Client
) -> None:
    instance, task = _locked(server, op)
    answer = op.post(f"/external-task/{task['id']}/complete", json={"workerId": "intruder"})
    assert answer.status_code == 400 and answer.json()["type"] == "RestException"
    assert op.post(f"/external-task/{task['id']}/complete", json={}).status_code == 400
    assert op.get(f"/external-task/{task['id']}").json()["workerId"] == "w1"
    done = op.post(f"/external-task/{task['id']}/complete", json={"workerId": "w1"})
    assert done.status_code == 204 and done.content == b""
    server.runtime.run_until_idle(timeout=5)
    assert ended_at(server.runtime, instance) == ("COMPLETED", {"done"})


def test_extend_unlock_and_lock(server: Server, op: httpx.Client) -> None:
    _, task = _locked(server, op)
    tid = task["id"]
    extended = op.post(
        f"/external-task/{tid}/extendLock", json={"workerId": "w1", "newDuration": 120000}
    )
    assert extended.status_code == 204
    assert op.get(f"/external-task/{tid}").json()["lockExpirationTime"] > task["lockExpirationTime"]
    assert (
        op.post(
            f"/external-task/{tid}/extendLock", json={"workerId": "w2", "newDuration": 1000}
        ).status_code
        == 400
    )
    assert op.post(f"/external-task/{tid}/unlock").status_code == 204  # no body, no type
    assert op.get(f"/external-task/{tid}").json()["workerId"] is None
    assert (
        op.post(
            f"/external-task/{tid}/lock", json={"workerId": "w3", "lockDuration": 5000}
        ).status_code
        == 204
    )
    assert op.get(f"/external-task/{tid}").json()["workerId"] == "w3"
    assert (
        op.post(
            f"/external-task/{tid}/lock", json={"workerId": "w4", "lockDuration": 5000}
        ).status_code
        == 400
    )
    listed = op.get("/external-task", params={"workerId": "w3", "locked": "true"}).json()
    assert [t["id"] for t in listed] == [tid]
    assert set(listed[0]) >= {"id", "topicName", "workerId", "retries", "suspended"}
    assert "variables" not in listed[0]
    assert op.post(f"/external-task/{tid}/unlock").status_code == 204


def test_retries_after_an_incident(server: Server, op: httpx.Client) -> None:
    instance, task = _locked(server, op)
    tid = task["id"]
    failed = op.post(
        f"/external-task/{tid}/failure", json={"workerId": "w1", "errorMessage": "down"}
    )
    assert failed.status_code == 204  # no retries given: 0, an incident at once
    shown = op.get(f"/external-task/{tid}").json()
    assert shown["retries"] == 0 and shown["errorMessage"] == "down"
    assert [t["id"] for t in op.get("/external-task", params={"noRetriesLeft": "true"}).json()] == [
        tid
    ]
    assert op.put(f"/external-task/{tid}/retries", json={"retries": 2}).status_code == 204
    server.runtime.run_until_idle(timeout=5)
    again = op.get(f"/external-task/{tid}").json()
    assert again["workerId"] is None and again["retries"] == 2, again
    assert server.runtime.engine.show(instance)["state"] == "RUNNING"


def test_a_java_serialized_variable_is_refused(server: Server, op: httpx.Client) -> None:
    _, task = _locked(server, op)
    body = {
        "workerId": "w1",
        "variables": {
            "o": {
                "type": "Object",
                "value": "rO0ABX",
                "valueInfo": {"serializationDataFormat": "application/x-java-serialized-object"},
            }
        },
    }
    answer = op.post(f"/external-task/{task['id']}/complete", json=body)
    assert answer.status_code == 400
    assert "Java-serialized object is refused" in answer.json()["message"]
    assert op.get(f"/external-task/{task['id']}").json()["workerId"] == "w1"
    assert op.post(f"/external-task/{task['id']}/unlock").status_code == 204


def test_a_fault_is_500_without_a_traceback(server: Server, op: httpx.Client) -> None:
    answer = op.post(FETCH, content=b"{not json", headers={"Content-Type": "application/json"})
    assert answer.status_code == 400 and "Traceback" not in answer.text
