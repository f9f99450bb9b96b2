"""Answers shaped as Camunda's, each one a real client broke on: no ``variables: null``, counts
that ignore paging, the default engine's named paths, trailing slashes, empty start bodies,
what a failure leaves on the task, the BPMN error's message, parse errors Camunda Modeler can
point at, HAL task lists, incidents in the activity tree, and the endpoints the Python clients
call by default."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import httpx
import pytest

from bpm.errors import BpmnError
from bpm.handlers import HandlerContext, HandlerResult, handler
from bpm_server.dates import parse_date
from tests.server.conftest import Server
from tests.server.ops_processes import form_key_bpmn
from tests.server.processes import error_boundary_bpmn, message_bpmn, start

FETCH = "/external-task/fetchAndLock"
NO_STOCK = "shapesNoStock"


@handler(NO_STOCK)
def no_stock(ctx: HandlerContext) -> HandlerResult:
    raise BpmnError("E1", "nothing left")


def _with_message_variable(xml: str) -> str:
    """The error boundary copies the error's code and message into variables."""
    return xml.replace(
        '<bpmn:errorEventDefinition errorRef="E1"/>',
        '<bpmn:errorEventDefinition errorRef="E1" camunda:errorCodeVariable="code"'
        ' camunda:errorMessageVariable="why"/>',
    )


@pytest.fixture(scope="module")
def op(server: Server) -> Iterator[httpx.Client]:
    engine = server.runtime.engine
    engine.deploy_bpmn(_with_message_variable(error_boundary_bpmn("sh_ext", "sh-topic")))
    handled = error_boundary_bpmn("sh_handler", "unused").replace(
        'camunda:type="external" camunda:topic="unused"', f'camunda:class="x.{NO_STOCK}"'
    )
    engine.deploy_bpmn(_with_message_variable(handled))
    engine.deploy_bpmn(message_bpmn("sh_msg", "sh-paid"))
    engine.deploy_bpmn(form_key_bpmn("sh_sign"))
    with server.client("operator") as client:
        yield client


def _locked(server: Server, op: httpx.Client) -> tuple[str, dict[str, Any]]:
    key = uuid4().hex
    instance = start(server.runtime, "sh_ext", business_key=key)
    body = {
        "workerId": "w1",
        "maxTasks": 1,
        "topics": [{"topicName": "sh-topic", "lockDuration": 60000, "businessKey": key}],
    }
    [task] = op.post(FETCH, json=body).json()
    return instance, task


# --- variables: absent unless asked for ---------------------------------------------------


def test_a_start_answer_has_no_variables_key_unless_asked(op: httpx.Client) -> None:
    plain = op.post("/process-definition/key/sh_msg/start", json={"businessKey": uuid4().hex})
    assert plain.status_code == 200, plain.text
    assert "variables" not in plain.json()
    asked = op.post(
        "/process-definition/key/sh_msg/start",
        json={"variables": {"n": {"value": 1, "type": "Integer"}}, "withVariablesInReturn": True},
    )
    assert asked.json()["variables"]["n"] == {"type": "Integer", "value": 1, "valueInfo": {}}


def test_a_start_accepts_an_empty_body(op: httpx.Client) -> None:
    for headers in ({}, {"Content-Type": "application/json"}):
        started = op.post("/process-definition/key/sh_msg/start", content=b"", headers=headers)
        assert started.status_code == 200, started.text
        assert started.json()["definitionKey"] == "sh_msg"
        assert "variables" not in started.json()


def test_correlation_results_have_no_variables_key_unless_asked(op: httpx.Client) -> None:
    keys = [uuid4().hex, uuid4().hex]
    for key in keys:
        op.post("/process-definition/key/sh_msg/start", json={"businessKey": key})
    body = {"messageName": "sh-paid", "businessKey": keys[0], "resultEnabled": True}
    (result,) = op.post("/message", json=body).json()
    assert result["resultType"] == "Execution" and "variables" not in result
    asked = {**body, "businessKey": keys[1], "variablesInResultEnabled": True}
    (with_variables,) = op.post("/message", json=asked).json()
    assert with_variables["variables"] == {}


# --- paths ----------------------------------------------------------------------------------


def test_every_count_ignores_paging_and_sorting(server: Server, op: httpx.Client) -> None:
    paths = op.get("/openapi.json").json()["paths"]
    # A count of one resource's items (/filter/{id}/count) needs that resource: its own test.
    counts = [
        (p, m) for p, ops in paths.items() if p.endswith("/count") and "{" not in p for m in ops
    ]
    assert len(counts) >= 15, counts
    params = {"sortBy": "id", "sortOrder": "asc", "firstResult": "0", "maxResults": "10"}
    # bpm counts the visits, the variable updates and the event subscriptions of one
    # instance at a time
    one = {"processInstanceId": start(server.runtime, "sh_msg")}
    for path, method in counts:
        sub = path.removeprefix("/engine-rest")
        per_instance = (
            "/history/activity-instance/count",
            "/history/detail/count",
            "/event-subscription/count",
        )
        query = {**params, **one} if sub in per_instance and method == "get" else params
        body: dict[str, Any] | None = None
        if method == "post":
            body = dict(one) if sub in per_instance else {}
        got = op.request(method.upper(), sub, params=query, json=body)
        assert got.status_code == 200, (method, path, got.text)
        assert isinstance(got.json()["count"], int)


def test_the_default_engine_is_served_by_name_too(server: Server, op: httpx.Client) -> None:
    named = f"{server.base}/engine/default"
    plain = op.get("/process-definition/count").json()
    assert op.get(f"{named}/process-definition/count").json() == plain
    started = op.post(f"{named}/process-definition/key/sh_msg/start", json={})
    assert started.status_code == 200, started.text
    assert op.get(f"{named}/engine").json() == [{"name": "default"}]
    other = op.get(f"{server.base}/engine/other/process-definition")
    assert other.status_code == 404
    assert "'other'" in other.json()["message"] and "'default'" in other.json()["message"]


def test_a_trailing_slash_is_served_without_a_redirect(server: Server, op: httpx.Client) -> None:
    started = op.post("/process-definition/key/sh_msg/start/", json={})
    assert started.status_code == 200, started.text
    assert op.get("/process-definition/").status_code == 200
    named = op.get(f"{server.base}/engine/default/task/count/")
    assert named.status_code == 200 and "count" in named.json()


# --- external tasks -------------------------------------------------------------------------


def test_a_failure_keeps_the_worker_and_locks_until_the_retry(
    server: Server, op: httpx.Client
) -> None:
    _, task = _locked(server, op)
    before = datetime.now(UTC)
    body = {"workerId": "w1", "errorMessage": "down", "retries": 2, "retryTimeout": 600_000}
    assert op.post(f"/external-task/{task['id']}/failure", json=body).status_code == 204
    after = datetime.now(UTC)
    shown = op.get(f"/external-task/{task['id']}").json()
    assert shown["workerId"] == "w1" and shown["retries"] == 2
    expiry = parse_date(shown["lockExpirationTime"])
    wait = timedelta(milliseconds=600_000)
    # formatted to the millisecond: allow the one that was cut off
    assert before + wait - timedelta(milliseconds=1) <= expiry <= after + wait
    # still not fetchable until then
    again = {**body, "maxTasks": 5, "topics": [{"topicName": "sh-topic", "lockDuration": 1000}]}
    assert task["id"] not in {t["id"] for t in op.post(FETCH, json=again).json()}


def test_a_failed_tasks_incident_message_is_its_error_message(
    server: Server, op: httpx.Client
) -> None:
    instance, task = _locked(server, op)
    body = {"workerId": "w1", "errorMessage": "card declined", "errorDetails": "trace"}
    assert op.post(f"/external-task/{task['id']}/failure", json=body).status_code == 204
    (incident,) = op.get("/incident", params={"processInstanceId": instance}).json()
    assert incident["incidentMessage"] == "card declined"
    assert incident["configuration"] == task["id"]
    shown = op.get(f"/external-task/{task['id']}").json()
    assert shown["workerId"] == "w1" and shown["errorMessage"] == "card declined"
    details = op.get(f"/external-task/{task['id']}/errorDetails")
    assert details.status_code == 200 and details.text == "trace"
    assert details.headers["content-type"].startswith("text/plain")
    tree = op.get(f"/process-instance/{instance}/activity-instances").json()
    (work,) = tree["childActivityInstances"]
    assert work["incidentIds"] == [incident["id"]]
    assert work["incidents"] == [{"id": incident["id"], "parentActivityInstanceId": work["id"]}]
    assert tree["incidents"] == []


def test_the_error_message_variable_gets_the_message_as_given(
    server: Server, op: httpx.Client
) -> None:
    instance, task = _locked(server, op)
    body = {"workerId": "w1", "errorCode": "E1", "errorMessage": "nothing left"}
    assert op.post(f"/external-task/{task['id']}/bpmnError", json=body).status_code == 204
    variables = server.runtime.engine.show(instance)["variables"]
    assert variables["why"] == "nothing left" and variables["code"] == "E1"


def test_a_handlers_error_message_variable_gets_the_message_as_given(server: Server) -> None:
    instance = start(server.runtime, "sh_handler")
    variables = server.runtime.engine.show(instance)["variables"]
    assert variables["why"] == "nothing left" and variables["code"] == "E1"


def test_external_tasks_are_counted_by_get_and_post(server: Server, op: httpx.Client) -> None:
    instance, _ = _locked(server, op)
    params = {"processInstanceId": instance}
    assert op.get("/external-task/count", params=params).json() == {"count": 1}
    assert op.get("/external-task/count", params={**params, "notLocked": "true"}).json() == {
        "count": 0
    }
    assert op.post("/external-task/count", json=params).json() == {"count": 1}
    assert op.post("/external-task/count", json={**params, "locked": True}).json() == {"count": 1}
    assert op.post("/external-task/count", json={"processInstanceId": "x"}).json() == {"count": 0}
    everything = op.get("/external-task/count").json()["count"]
    assert everything == len(op.get("/external-task").json()) >= 1
    refused = op.post("/external-task/count", json={"activityId": "work"})
    assert refused.status_code == 400 and "activityId" in refused.json()["message"]


def test_a_variables_data_is_400_unless_binary(server: Server, op: httpx.Client) -> None:
    instance = start(server.runtime, "sh_ext", amount=5)
    data = op.get(f"/process-instance/{instance}/variables/amount/data")
    assert data.status_code == 400 and data.json()["type"] == "InvalidRequestException"
    assert "not a binary value" in data.json()["message"]
    missing = op.get(f"/process-instance/{instance}/variables/nope/data")
    assert missing.status_code == 404 and "nope" in missing.json()["message"]


# --- deployments ----------------------------------------------------------------------------


def test_a_refused_deployment_reads_as_camundas_parse_error(op: httpx.Client) -> None:
    bad = error_boundary_bpmn("sh_bad", "t").replace('targetRef="done"', 'targetRef="nope"')
    files = [("data", ("bad.bpmn", bad.encode(), "application/octet-stream"))]
    got = op.post("/deployment/create", data={"deployment-name": "bad"}, files=files)
    assert got.status_code == 400
    answer = got.json()
    assert answer["type"] == "ParseException"
    assert answer["message"].startswith("ENGINE-09005 Could not parse BPMN process. Errors: \n* ")
    assert "| resource bad.bpmn | line 14" in answer["message"]
    (error,) = answer["details"]["bad.bpmn"]["errors"]
    assert error["mainBpmnElementId"] == "f2" and error["bpmnElementIds"] == ["f2"]
    assert error["line"] == 14 and "nope" in error["message"]
    assert not error["message"].startswith("line ")
    assert answer["details"]["bad.bpmn"]["warnings"] == []


# --- user tasks -----------------------------------------------------------------------------


def test_tasks_answer_hal_when_asked_and_carry_their_state(
    server: Server, op: httpx.Client
) -> None:
    instance = start(server.runtime, "sh_sign")
    params = {"processInstanceId": instance}
    (task,) = op.get("/task", params=params).json()
    assert task["taskState"] == "Created"
    hal = op.get(
        "/task",
        params={**params, "maxResults": "0"},
        headers={"Accept": "application/hal+json, application/json;q=0.9"},
    )
    assert hal.headers["content-type"] == "application/hal+json"
    body = hal.json()
    assert body["count"] == 1 and body["_embedded"]["task"] == []
    full = op.get("/task", params=params, headers={"Accept": "application/hal+json"}).json()
    (embedded,) = full["_embedded"]["task"]
    assert {k: v for k, v in embedded.items() if not k.startswith("_")} == task
    assert embedded["_links"]["self"] == {"href": f"/task/{task['id']}"}
    (definition,) = full["_embedded"]["processDefinition"]
    assert definition["id"] == task["processDefinitionId"] and definition["key"] == "sh_sign"
    plain = op.get("/task", params=params, headers={"Accept": "application/json"})
    assert plain.headers["content-type"] == "application/json" and plain.json() == [task]
    either = op.get(
        "/task", params=params, headers={"Accept": "application/json, application/hal+json"}
    )
    assert either.json() == [task]
