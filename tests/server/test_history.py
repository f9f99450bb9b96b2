"""``/history`` over HTTP against a real server: instances (running, completed, cancelled,
with incidents), their node visits, their variables and their incidents, as Camunda 7's
history shows them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.ops_processes import (  # noqa: F401 (a fixture)
    parallel_bpmn,
    review_bpmn,
    review_task,
    server_imports_the_handlers,
    start,
    to_incident,
)

UNKNOWN = "7e0c8b8e-3b1c-4a8e-9a49-0a4b5e8e9f10"
INSTANCE_FIELDS = {
    "id", "businessKey", "processDefinitionId", "processDefinitionKey",
    "processDefinitionName", "processDefinitionVersion", "startTime", "endTime", "removalTime",
    "durationInMillis", "startUserId", "startActivityId", "deleteReason",
    "rootProcessInstanceId", "superProcessInstanceId", "superCaseInstanceId", "caseInstanceId",
    "tenantId", "state", "restartedProcessInstanceId",
}  # fmt: skip


@pytest.fixture(scope="module")
def instances(server: Server) -> dict[str, str]:
    """One instance of each kind: completed, waiting at its review, failed with an
    incident, cancelled while waiting."""
    rt = server.runtime
    rt.engine.deploy_bpmn(review_bpmn("hi_review"))
    server.add("viewer", Role.VIEWER)
    server.add("worker", Role.WORKER)
    failed = to_incident(rt, "hi_review", "hi-failed")
    rt.engine.retry(rt.engine.show(failed)["incidents"][0]["token_id"])
    rt.run_until_idle(timeout=5)  # the second run works: completed, after an incident
    waiting = start(rt, "hi_review", "hi-waiting")
    rt.engine.claim(review_task(rt, waiting), "ann")
    cancelled = start(rt, "hi_review", "hi-cancelled")
    rt.engine.cancel(cancelled)
    open_incident = to_incident(rt, "hi_review", "hi-incident")
    return {
        "completed": failed,
        "waiting": waiting,
        "cancelled": cancelled,
        "incident": open_incident,
    }


def _get(server: Server, path: str, **params: str | int) -> object:
    with server.client("viewer") as c:
        got = c.get(path, params=params)
    assert got.status_code == 200, got.text
    return got.json()


def test_historic_instances_and_their_states(server: Server, instances: dict[str, str]) -> None:
    found = _get(server, "/history/process-instance", processDefinitionKey="hi_review")
    assert isinstance(found, list)
    by_id = {i["id"]: i for i in found}
    assert set(by_id) == set(instances.values())
    done = by_id[instances["completed"]]
    assert set(done) == INSTANCE_FIELDS
    assert done["state"] == "COMPLETED" and done["endTime"] is not None
    assert done["durationInMillis"] >= 0 and done["startActivityId"] == "start"
    assert done["processDefinitionVersion"] == 1 and done["processDefinitionName"]
    assert done["businessKey"] == "hi-failed"
    assert by_id[instances["waiting"]]["state"] == "ACTIVE"
    assert by_id[instances["waiting"]]["endTime"] is None
    assert by_id[instances["cancelled"]]["state"] == "EXTERNALLY_TERMINATED"
    assert by_id[instances["incident"]]["state"] == "ACTIVE"  # failed: Camunda has no such
    one = _get(server, f"/history/process-instance/{instances['completed']}")
    assert one == done


def test_historic_instance_filters(server: Server, instances: dict[str, str]) -> None:
    def ids(**params: str | int) -> set[str]:
        found = _get(
            server, "/history/process-instance", processDefinitionKey="hi_review", **params
        )
        assert isinstance(found, list)
        return {i["id"] for i in found}

    every = set(instances.values())
    ended = {instances["completed"], instances["cancelled"]}
    assert ids(finished="true") == ended and ids(unfinished="true") == every - ended
    assert ids(processInstanceBusinessKey="hi-waiting") == {instances["waiting"]}
    assert ids(processInstanceBusinessKeyLike="hi-%") == every
    assert ids(withIncidents="true") == {instances["completed"], instances["incident"]}
    assert ids(completed="true") == {instances["completed"]}
    assert ids(externallyTerminated="true") == {instances["cancelled"]}
    assert ids(active="true") == {instances["waiting"], instances["incident"]}
    assert ids(processInstanceIds=f"{instances['waiting']},{UNKNOWN}") == {instances["waiting"]}
    hour = timedelta(hours=1)
    assert ids(startedAfter=(datetime.now(UTC) - hour).isoformat()) == every
    assert ids(startedBefore=(datetime.now(UTC) - hour).isoformat()) == set()
    assert ids(finishedAfter=(datetime.now(UTC) - hour).isoformat()) == ended
    newest = _get(
        server, "/history/process-instance", processDefinitionKey="hi_review",
        sortBy="startTime", sortOrder="desc", maxResults=1,
    )  # fmt: skip
    assert isinstance(newest, list) and newest[0]["id"] == instances["incident"]
    counted = _get(server, "/history/process-instance/count", processDefinitionKey="hi_review")
    assert counted == {"count": 4}
    with server.client("viewer") as c:
        for params, named in (
            ({"startedBy": "ann"}, "startedBy"),
            ({"tenantIdIn": "t"}, "tenantIdIn"),
            ({"sortBy": "tenantId", "sortOrder": "asc"}, "tenantId"),
            ({"finishedAfter": "yesterday"}, "finishedAfter"),
        ):
            refused = c.get("/history/process-instance", params=params)
            assert refused.status_code == 400 and named in refused.json()["message"], params
        assert c.get(f"/history/process-instance/{UNKNOWN}").status_code == 404
        assert c.get("/history/process-instance/nope").status_code == 404


def test_activity_instances_are_the_node_visits(server: Server, instances: dict[str, str]) -> None:
    found = _get(
        server, "/history/activity-instance", processInstanceId=instances["completed"],
        sortBy="startTime", sortOrder="asc",
    )  # fmt: skip
    assert isinstance(found, list)
    kinds = [(v["activityId"], v["activityType"]) for v in found]
    assert kinds == [
        ("start", "startEvent"),
        ("review", "userTask"),
        ("charge", "serviceTask"),
        ("done", "noneEndEvent"),
    ]
    start_, review, charge, done = found
    assert start_["activityName"] == "Order received" and review["activityName"] == "Review order"
    assert review["taskId"] is not None and charge["taskId"] is None
    assert all(v["endTime"] is not None and v["durationInMillis"] >= 0 for v in found)
    assert done["completeScope"] is True and review["completeScope"] is False
    assert not any(v["canceled"] for v in found)
    assert {v["processInstanceId"] for v in found} == {instances["completed"]}
    waiting = _get(server, "/history/activity-instance", processInstanceId=instances["waiting"])
    assert isinstance(waiting, list)
    assert waiting[-1]["activityId"] == "review" and waiting[-1]["endTime"] is None
    assert waiting[-1]["assignee"] == "ann"
    cancelled = _get(
        server, "/history/activity-instance", processInstanceId=instances["cancelled"],
        activityId="review",
    )  # fmt: skip
    assert isinstance(cancelled, list) and cancelled[0]["canceled"] is True
    unfinished = _get(
        server, "/history/activity-instance/count", processInstanceId=instances["waiting"],
        unfinished="true",
    )  # fmt: skip
    assert unfinished == {"count": 1}
    typed = _get(
        server, "/history/activity-instance/count", processInstanceId=instances["completed"],
        activityType="userTask",
    )  # fmt: skip
    assert typed == {"count": 1}
    with server.client("viewer") as c:
        needs = c.get("/history/activity-instance")
        assert needs.status_code == 400 and "processInstanceId" in needs.json()["message"]
        for unknown in (UNKNOWN, "nope"):
            none = c.get("/history/activity-instance", params={"processInstanceId": unknown})
            assert none.status_code == 200 and none.json() == []


def test_visits_of_a_fork_a_join_and_a_cancelled_branch(server: Server) -> None:
    rt = server.runtime
    rt.engine.deploy_bpmn(parallel_bpmn("hi_parallel"))
    done, cancelled = start(rt, "hi_parallel"), start(rt, "hi_parallel")
    with server.client("viewer") as c:
        timers = c.get("/job", params={"processInstanceId": cancelled, "timers": "true"}).json()
    assert [t["retries"] for t in timers] == [1]  # the boundary timer of b is a job
    rt.engine.complete_user_task(review_task(rt, done), {})
    rt.run_until_idle(timeout=5)
    rt.engine.cancel(cancelled)

    def visits(instance: str) -> list[tuple[str, str, bool, bool]]:
        found = _get(server, "/history/activity-instance", processInstanceId=instance)
        assert isinstance(found, list)
        assert all(v["endTime"] is not None for v in found)
        return [(v["activityId"], v["activityType"], v["canceled"], v["completeScope"])
                for v in found]  # fmt: skip

    assert sorted(visits(done)) == sorted(
        [
            ("start", "startEvent", False, False),
            ("fork", "parallelGateway", False, False),
            ("a", "task", False, False),
            ("b", "userTask", False, False),
            ("join", "parallelGateway", False, False),
            ("join", "parallelGateway", False, False),
            ("choose", "exclusiveGateway", False, False),
            ("end", "noneEndEvent", False, True),
        ]
    )
    gone = visits(cancelled)
    assert ("b", "userTask", True, False) in gone and (
        "fork",
        "parallelGateway",
        False,
        False,
    ) in gone


def test_variable_instances(server: Server, instances: dict[str, str]) -> None:
    found = _get(
        server, "/history/variable-instance", processInstanceId=instances["completed"],
        sortBy="variableName", sortOrder="asc",
    )  # fmt: skip
    assert isinstance(found, list)
    assert [(v["name"], v["type"], v["value"]) for v in found] == [
        ("amount", "Integer", 5),
        ("approved", "Boolean", True),
        ("charged", "Boolean", True),
        ("orderId", "String", "A1"),
    ]
    assert found[0]["processInstanceId"] == instances["completed"]
    assert found[0]["state"] == "CREATED" and found[0]["processDefinitionKey"] == "hi_review"
    both = f"{instances['waiting']},{instances['cancelled']}"
    named = _get(
        server, "/history/variable-instance", variableName="orderId", processInstanceIdIn=both
    )
    assert isinstance(named, list) and len(named) == 2
    assert _get(server, "/history/variable-instance/count", variableNameLike="charg%",
                processDefinitionKey="hi_review") == {"count": 1}  # fmt: skip
    with server.client("viewer") as c:
        refused = c.get("/history/variable-instance", params={"variableValue": "x"})
        assert refused.status_code == 400 and "variableValue" in refused.json()["message"]


def test_historic_incidents_open_and_resolved(server: Server, instances: dict[str, str]) -> None:
    found = _get(server, "/history/incident", processDefinitionKeyIn="hi_review")
    assert isinstance(found, list) and len(found) == 2
    by_instance = {i["processInstanceId"]: i for i in found}
    resolved, still = by_instance[instances["completed"]], by_instance[instances["incident"]]
    assert resolved["resolved"] is True and resolved["open"] is False
    assert resolved["endTime"] is not None and resolved["createTime"] is not None
    assert still["open"] is True and still["endTime"] is None and still["deleted"] is False
    assert still["incidentType"] == "failedJob"
    assert _get(server, "/history/incident/count", processDefinitionKeyIn="hi_review",
                open="true") == {"count": 1}  # fmt: skip
    assert _get(server, "/history/incident/count", processDefinitionKeyIn="hi_review",
                deleted="true") == {"count": 0}  # fmt: skip


def test_historic_incident_filters_are_checked(server: Server, instances: dict[str, str]) -> None:
    with server.client("viewer") as c:
        for params, named in (
            (
                {"incidentTimestampBefore": "2026-01-01T00:00:00.000+0000"},
                "incidentTimestampBefore",
            ),
            ({"createTimeAfter": "soon"}, "createTimeAfter"),
            ({"tenantIdIn": "t"}, "tenantIdIn"),
            ({"sortBy": "endTime", "sortOrder": "sideways"}, "sortOrder"),
        ):
            refused = c.get("/history/incident", params=params)
            assert refused.status_code == 400 and named in refused.json()["message"], params
        newest = c.get(
            "/history/incident",
            params={"processDefinitionKeyIn": "hi_review", "sortBy": "createTime",
                    "sortOrder": "desc"},
        ).json()  # fmt: skip
    assert newest[0]["processInstanceId"] == instances["incident"]


def test_who_may_read_history(server: Server, instances: dict[str, str]) -> None:
    with server.client("worker") as c:
        assert c.get("/history/process-instance").status_code == 403
        assert c.get("/history/variable-instance").status_code == 403
    with server.client() as c:
        assert c.get("/history/incident").status_code == 401
