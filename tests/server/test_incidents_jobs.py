"""``/incident`` and ``/job`` over HTTP against a real server: a handler task that fails into
an incident (a ``failedJob``), an external task failed by its worker (``failedExternalTask``),
a timer job; retrying through the job's retries, resolving by deleting the incident."""

from __future__ import annotations

import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.ops_processes import (  # noqa: F401 (a fixture)
    review_bpmn,
    server_imports_the_handlers,
    start,
    timer_bpmn,
    to_incident,
)
from tests.server.processes import deploy

INCIDENT_FIELDS = {
    "id", "processDefinitionId", "processInstanceId", "executionId", "incidentTimestamp",
    "incidentType", "activityId", "failedActivityId", "causeIncidentId", "rootCauseIncidentId",
    "configuration", "tenantId", "incidentMessage", "jobDefinitionId", "annotation",
}  # fmt: skip
JOB_FIELDS = {
    "id", "jobDefinitionId", "processInstanceId", "processDefinitionId",
    "processDefinitionKey", "executionId", "exceptionMessage", "failedActivityId", "retries",
    "dueDate", "suspended", "priority", "tenantId", "createTime", "batchId",
}  # fmt: skip
UNKNOWN = "7e0c8b8e-3b1c-4a8e-9a49-0a4b5e8e9f10"


@pytest.fixture(scope="module")
def deployed(server: Server) -> Server:
    server.runtime.engine.deploy_bpmn(review_bpmn("ij_review"))
    server.runtime.engine.deploy_bpmn(timer_bpmn("ij_timer"))
    deploy(server.runtime, "ij_external", "ij-topic")
    server.add("viewer", Role.VIEWER)
    server.add("worker", Role.WORKER)
    return server


def _incidents(server: Server, **params: str | int) -> list[dict[str, object]]:
    with server.client("viewer") as c:
        found = c.get("/incident", params=params)
    assert found.status_code == 200, found.text
    return list(found.json())


def _job(server: Server, instance: str) -> dict[str, object]:
    with server.client("viewer") as c:
        found = c.get("/job", params={"processInstanceId": instance}).json()
    assert len(found) == 1, found
    return dict(found[0])


def test_a_failed_handler_task_is_a_failed_job_with_an_incident(deployed: Server) -> None:
    instance = to_incident(deployed.runtime, "ij_review")
    [incident] = _incidents(deployed, processInstanceId=instance)
    job = _job(deployed, instance)
    assert set(incident) == INCIDENT_FIELDS and set(job) == JOB_FIELDS
    assert incident["incidentType"] == "failedJob"
    assert incident["configuration"] == job["id"]
    assert incident["activityId"] == incident["failedActivityId"] == "charge"
    assert incident["causeIncidentId"] == incident["rootCauseIncidentId"] == incident["id"]
    assert "flaky failed for A1" in str(incident["incidentMessage"])
    assert job["retries"] == 0 and job["failedActivityId"] == "charge"
    assert job["exceptionMessage"] == "RuntimeError: flaky failed for A1"
    assert job["processDefinitionKey"] == "ij_review" and job["dueDate"] is None
    with deployed.client("viewer") as c:
        assert c.get(f"/incident/{incident['id']}").json() == incident
        assert c.get(f"/job/{job['id']}").json() == job
        trace = c.get(f"/job/{job['id']}/stacktrace")
    assert trace.status_code == 200 and trace.headers["content-type"].startswith("text/plain")
    assert "RuntimeError: flaky failed for A1" in trace.text and "Traceback" in trace.text


def test_incident_and_job_filters(deployed: Server) -> None:
    instance = to_incident(deployed.runtime, "ij_review", "ij-filters")
    [incident] = _incidents(deployed, processInstanceId=instance)
    job = _job(deployed, instance)
    mine = {"processInstanceId": instance}
    assert _incidents(deployed, incidentType="failedJob", **mine) == [incident]
    assert _incidents(deployed, incidentType="failedExternalTask", **mine) == []
    assert _incidents(deployed, activityId="charge", configuration=str(job["id"])) == [incident]
    assert _incidents(deployed, incidentId=UNKNOWN) == []
    assert _incidents(deployed, processDefinitionKeyIn="ij_review,x", **mine) == [incident]
    assert _incidents(deployed, incidentMessageLike="%flaky%", **mine) == [incident]
    with deployed.client("viewer") as c:
        count = c.get("/incident/count", params={"processDefinitionKeyIn": "ij_review"}).json()
        listed = c.get(
            "/incident",
            params={"processDefinitionKeyIn": "ij_review", "sortBy": "incidentTimestamp",
                    "sortOrder": "desc"},
        ).json()  # fmt: skip
        assert count["count"] == len(listed) >= 1
        assert listed[0]["id"] == incident["id"]  # the newest first

        def jobs(**params: str | int) -> list[object]:
            found = c.get("/job", params={"processInstanceId": instance, **params})
            assert found.status_code == 200, found.text
            return [j["id"] for j in found.json()]

        assert jobs(noRetriesLeft="true") == [job["id"]] and jobs(withRetriesLeft="true") == []
        assert jobs(withException="true", activityId="charge") == [job["id"]]
        assert jobs(timers="true") == [] and jobs(messages="true") == [job["id"]]
        assert jobs(failedActivityId="charge") == [job["id"]] and jobs(suspended="true") == []
        posted = c.post("/job", json={"processInstanceIds": [instance], "withException": True})
        assert [j["id"] for j in posted.json()] == [job["id"]]
        assert c.post("/job/count", json={"jobIds": [job["id"]]}).json() == {"count": 1}
        assert c.get("/job/count", params={"jobId": UNKNOWN}).json() == {"count": 0}
        for path, params, named in (
            ("/incident", {"tenantIdIn": "t"}, "tenantIdIn"),
            ("/incident", {"jobDefinitionIdIn": "j"}, "jobDefinitionIdIn"),
            ("/incident", {"sortBy": "tenantId", "sortOrder": "asc"}, "tenantId"),
            ("/job", {"executable": "true"}, "executable"),
            ("/job", {"dueDates": "gt_2026-01-01T00:00:00.000+0000"}, "dueDates"),
            ("/job", {"withRetriesLeft": "often"}, "withRetriesLeft"),
        ):
            refused = c.get(path, params=params)
            assert refused.status_code == 400, (path, params, refused.text)
            assert named in refused.json()["message"]


def test_a_timer_is_a_job_without_retries_to_set(deployed: Server) -> None:
    instance = start(deployed.runtime, "ij_timer")
    job = _job(deployed, instance)
    assert job["retries"] == 1 and job["exceptionMessage"] is None
    assert isinstance(job["dueDate"], str)
    with deployed.client("viewer") as c:
        assert c.get("/job", params={"processInstanceId": instance, "timers": "true"}).json()
        assert c.get(f"/job/{job['id']}/stacktrace").status_code == 204
    with deployed.client("operator") as c:
        refused = c.put(f"/job/{job['id']}/retries", json={"retries": 3})
    assert refused.status_code == 400 and "timer" in refused.json()["message"]
    assert deployed.runtime.engine.show(instance)["timers"][0]["state"] == "SCHEDULED"


def test_setting_a_failed_job_s_retries_runs_it_again_and_resolves_its_incident(
    deployed: Server,
) -> None:
    instance = to_incident(deployed.runtime, "ij_review")
    [incident] = _incidents(deployed, processInstanceId=instance)
    job = _job(deployed, instance)
    with deployed.client("viewer") as c:
        assert c.put(f"/job/{job['id']}/retries", json={"retries": 1}).status_code == 403
    with deployed.client("operator") as c:
        assert c.put(f"/job/{job['id']}/retries", json={"retries": -1}).status_code == 400
        assert c.put(f"/job/{job['id']}/retries", json={"retries": 0}).status_code == 400
        assert c.put(f"/job/{UNKNOWN}/retries", json={"retries": 1}).status_code == 404
        assert deployed.runtime.engine.show(instance)["state"] == "FAILED"
        done = c.put(f"/job/{job['id']}/retries", json={"retries": 1})
        assert done.status_code == 204, done.text
        assert c.get(f"/incident/{incident['id']}").status_code == 404
        assert c.get(f"/job/{job['id']}").status_code == 404
        historic = c.get("/history/incident", params={"incidentId": str(incident["id"])}).json()
    assert deployed.runtime.engine.show(instance)["state"] == "COMPLETED"
    assert deployed.runtime.engine.show(instance)["variables"]["charged"] is True
    assert historic[0]["resolved"] is True and historic[0]["endTime"] is not None


def test_deleting_an_incident_resolves_it_and_leaves_the_job_failed(deployed: Server) -> None:
    instance = to_incident(deployed.runtime, "ij_review")
    [incident] = _incidents(deployed, processInstanceId=instance)
    with deployed.client("viewer") as c:
        assert c.delete(f"/incident/{incident['id']}").status_code == 403
    with deployed.client("operator") as c:
        assert c.delete(f"/incident/{UNKNOWN}").status_code == 404
        assert c.delete(f"/incident/{incident['id']}").status_code == 204
        assert c.delete(f"/incident/{incident['id']}").status_code == 404
        assert c.get(f"/incident/{incident['id']}").status_code == 404
        still = c.get("/job", params={"processInstanceId": instance}).json()
        historic = c.get(
            "/history/incident", params={"processInstanceId": instance, "resolved": "true"}
        ).json()
    assert still[0]["retries"] == 0  # resolved by hand: nothing ran again
    assert [h["id"] for h in historic] == [incident["id"]]


def test_a_failed_external_task_is_a_failed_external_task_incident(deployed: Server) -> None:
    instance = start(deployed.runtime, "ij_external")
    with deployed.client("worker") as c:
        [locked] = c.post(
            "/external-task/fetchAndLock",
            json={"workerId": "w", "maxTasks": 1,
                  "topics": [{"topicName": "ij-topic", "lockDuration": 10000}]},
        ).json()  # fmt: skip
        failed = c.post(
            f"/external-task/{locked['id']}/failure",
            json={"workerId": "w", "errorMessage": "no card", "retries": 0},
        )
        assert failed.status_code == 204
    [incident] = _incidents(deployed, processInstanceId=instance)
    assert incident["incidentType"] == "failedExternalTask"
    assert incident["configuration"] == locked["id"]
    with deployed.client("viewer") as c:
        assert c.get("/job", params={"processInstanceId": instance}).json() == []
    with deployed.client("operator") as c:
        retried = c.put(f"/external-task/{locked['id']}/retries", json={"retries": 2})
        assert retried.status_code == 204
    assert _incidents(deployed, processInstanceId=instance) == []


def test_unknown_ids_and_who_may_read(deployed: Server) -> None:
    with deployed.client("viewer") as c:
        for path in (f"/incident/{UNKNOWN}", "/incident/nope", f"/job/{UNKNOWN}", "/job/x"):
            assert c.get(path).status_code == 404, path
        assert c.get(f"/job/{UNKNOWN}/stacktrace").status_code == 404
    with deployed.client("worker") as c:
        assert c.get("/incident").status_code == 403 and c.get("/job").status_code == 403
    with deployed.client() as c:
        assert c.get("/incident/count").status_code == 401


def test_a_post_query_without_a_body_lists_everything(deployed: Server) -> None:
    with deployed.client("viewer") as c:
        listed = c.post("/job")
        counted = c.post("/job/count")
    assert listed.status_code == 200, listed.text
    assert counted.json() == {"count": len(listed.json())}
