"""``/process-instance``: lists (GET parameters and the POST query body), counts, variable
conditions, one live instance (404 once ended), cancelling, variables one by one and in one
patch, and the activity-instance tree of a fork with a subprocess."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bpm.definitions import ProcessBuilder
from bpm.states import Role
from tests.helpers.modeler import chain, modeler_file
from tests.server.conftest import Server
from tests.server.processes import error_boundary_bpmn, message_bpmn, nested_bpmn


@pytest.fixture(scope="module")
def world(server: Server) -> Iterator[dict[str, object]]:
    rt = server.runtime
    rt.engine.deploy_bpmn(message_bpmn("pi_wait"))
    rt.engine.deploy_bpmn(nested_bpmn("pi_nested"))
    ids = {}
    for n, (bk, amount, tier) in enumerate(
        [("pi-1", 10, "gold"), ("pi-2", 200, "silver"), ("other-3", 50, "gold")], 1
    ):
        ids[f"w{n}"] = str(
            rt.engine.start("pi_wait", {"amount": amount, "tier": tier}, business_key=bk).id
        )
    ids["nested"] = str(rt.engine.start("pi_nested", {}, business_key="nested-1").id)
    rt.run_until_idle(timeout=5)
    server.add("pi-viewer", Role.VIEWER)
    server.add("pi-starter", Role.STARTER)
    clients = {n: server.client(n) for n in ("operator", "pi-viewer", "pi-starter")}
    yield {**ids, **clients}
    for c in clients.values():
        c.close()


def _c(world: dict[str, object], name: str = "operator") -> httpx.Client:
    client = world[name]
    assert isinstance(client, httpx.Client)
    return client


def _ids(got: httpx.Response) -> set[str]:
    assert got.status_code == 200, got.text
    return {i["id"] for i in got.json()}


def test_get_lists_with_filters(world: dict[str, object]) -> None:
    c = _c(world)
    w1, w2, w3 = world["w1"], world["w2"], world["w3"]
    waiting = {"processDefinitionKey": "pi_wait"}
    assert _ids(c.get("/process-instance", params=waiting)) == {w1, w2, w3}
    assert _ids(c.get("/process-instance", params={"businessKey": "pi-1"})) == {w1}
    assert _ids(c.get("/process-instance", params={"businessKeyLike": "pi-%"})) == {w1, w2}
    both = f"{w1},{w3}"
    assert _ids(c.get("/process-instance", params={"processInstanceIds": both})) == {w1, w3}
    keys = {"processDefinitionKeyIn": "pi_wait,pi_nested", "active": "true"}
    assert _ids(c.get("/process-instance", params=keys)) == {w1, w2, w3, world["nested"]}
    gt = c.get("/process-instance", params={"variables": "amount_gt_20,tier_eq_gold"})
    assert _ids(gt) == {w3}
    like = c.get("/process-instance", params={**waiting, "variables": "tier_like_sil%"})
    assert _ids(like) == {w2}
    neq = c.get("/process-instance", params={**waiting, "variables": "tier_neq_gold"})
    assert _ids(neq) == {w2}
    sorted_desc = c.get(
        "/process-instance",
        params={**waiting, "sortBy": "businessKey", "sortOrder": "desc", "maxResults": "2"},
    )
    assert [i["businessKey"] for i in sorted_desc.json()] == ["pi-2", "pi-1"]
    one = c.get("/process-instance", params={"businessKey": "pi-1"}).json()[0]
    assert one["definitionKey"] == "pi_wait" and one["ended"] is False
    assert one["suspended"] is False and one["tenantId"] is None
    by_def = c.get("/process-instance", params={"processDefinitionId": one["definitionId"]})
    assert _ids(by_def) == {w1, w2, w3}
    assert c.get("/process-instance/count", params=waiting).json() == {"count": 3}
    assert c.get("/process-instance", params={"processInstanceIds": "nope"}).json() == []


def test_post_query_and_count(world: dict[str, object]) -> None:
    c = _c(world)
    body = {
        "processDefinitionKey": "pi_wait",
        "variables": [{"name": "amount", "operator": "lteq", "value": 50}],
        "sorting": [{"sortBy": "businessKey", "sortOrder": "asc"}],
    }
    got = c.post("/process-instance", json=body)
    assert [i["businessKey"] for i in got.json()] == ["other-3", "pi-1"]
    paged = c.post("/process-instance", json=body, params={"firstResult": 1, "maxResults": 5})
    assert [i["businessKey"] for i in paged.json()] == ["pi-1"]
    assert c.post("/process-instance/count", json=body).json() == {"count": 2}


@pytest.mark.parametrize(
    ("method", "params", "body", "needle"),
    [
        ("GET", {"suspended": "true"}, None, "suspended"),
        ("GET", {"caseInstanceId": "x"}, None, "caseInstanceId"),
        ("GET", {"variables": "amount_between_1"}, None, "name_operator_value"),
        ("GET", {"variableValuesIgnoreCase": "true"}, None, "variableValuesIgnoreCase"),
        ("GET", {"sortBy": "tenantId", "sortOrder": "asc"}, None, "tenantId"),
        ("POST", {}, {"activityIdIn": ["a"]}, "activityIdIn"),
        (
            "POST",
            {},
            {"variables": [{"name": "a", "operator": "notLike", "value": "x"}]},
            "notLike",
        ),
        ("POST", {}, {"sorting": [{"sortBy": "a", "sortOrder": "asc"}]}, "cannot sort by 'a'"),
    ],
)
def test_filters_bpm_cannot_honour_are_refused(
    world: dict[str, object],
    method: str,
    params: dict[str, str],
    body: dict[str, object] | None,
    needle: str,
) -> None:
    got = _c(world).request(method, "/process-instance", params=params, json=body)
    assert got.status_code == 400, got.text
    assert needle in got.json()["message"]


def test_one_instance_and_404_once_it_ended(world: dict[str, object], server: Server) -> None:
    c = _c(world)
    started = server.runtime.engine.start("pi_wait", {}, business_key="pi-ends")
    server.runtime.run_until_idle(timeout=5)
    iid = str(started.id)
    got = c.get(f"/process-instance/{iid}")
    assert got.status_code == 200 and got.json()["businessKey"] == "pi-ends"
    server.runtime.engine.correlate("paid", business_key="pi-ends")
    server.runtime.run_until_idle(timeout=5)
    gone = c.get(f"/process-instance/{iid}")
    assert gone.status_code == 404 and gone.json()["type"] == "RestException"
    assert c.get("/process-instance/not-an-id").status_code == 404


def test_delete_cancels(world: dict[str, object], server: Server) -> None:
    c = _c(world)
    iid = str(server.runtime.engine.start("pi_wait", {}, business_key="pi-cancel").id)
    params = {"skipCustomListeners": "true", "skipIoMappings": "true"}
    got = c.delete(f"/process-instance/{iid}", params=params)
    assert got.status_code == 204, got.text
    assert server.runtime.engine.show(iid)["state"] == "CANCELLED"
    assert c.delete(f"/process-instance/{iid}").status_code == 404
    quiet = c.delete(f"/process-instance/{iid}", params={"failIfNotExists": "false"})
    assert quiet.status_code == 204
    assert c.delete(f"/process-instance/{iid}", params={"cascade": "x"}).status_code == 400


def test_variables_one_by_one_and_in_a_patch(world: dict[str, object], server: Server) -> None:
    c = _c(world)
    iid = str(server.runtime.engine.start("pi_wait", {"a": 1, "b": "x"}, business_key="pi-vars").id)
    base = f"/process-instance/{iid}/variables"
    assert c.get(base).json() == {
        "a": {"type": "Integer", "value": 1, "valueInfo": {}},
        "b": {"type": "String", "value": "x", "valueInfo": {}},
    }
    assert c.get(f"{base}/a").json() == {"type": "Integer", "value": 1, "valueInfo": {}}
    missing = c.get(f"{base}/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["message"]
    put = c.put(f"{base}/c", json={"value": '{"k": [1]}', "type": "Json"})
    assert put.status_code == 204
    assert c.delete(f"{base}/a").status_code == 204
    patch = {"modifications": {"d": {"value": True, "type": "Boolean"}}, "deletions": ["b"]}
    assert c.post(base, json=patch).status_code == 204
    assert server.runtime.engine.show(iid)["variables"] == {"c": {"k": [1]}, "d": True}
    kinds = [e["type"] for e in server.runtime.engine.trace(iid)]
    assert kinds.count("VariablesDeleted") == 2
    bad = c.post(base, json={"modifications": {"e": {"value": 1}}, "deletions": ["e"]})
    assert bad.status_code == 400 and "e" in bad.json()["message"]
    refused = c.put(f"{base}/f", json={"value": "AA==", "type": "Bytes"})
    assert refused.status_code == 400
    assert set(server.runtime.engine.show(iid)["variables"]) == {"c", "d"}
    unknown = "00000000-0000-0000-0000-000000000001"
    assert c.get(f"/process-instance/{unknown}/variables").status_code == 404
    assert c.put(f"/process-instance/{unknown}/variables/x", json={"value": 1}).status_code == 404


def test_activity_instances_of_a_fork_with_a_subprocess(world: dict[str, object]) -> None:
    c = _c(world)
    iid = world["nested"]
    got = c.get(f"/process-instance/{iid}/activity-instances")
    assert got.status_code == 200, got.text
    root = got.json()
    assert root["id"] == iid and root["activityType"] == "processDefinition"
    assert root["parentActivityInstanceId"] is None and root["executionIds"] == [iid]
    children = {a["activityId"]: a for a in root["childActivityInstances"]}
    assert set(children) == {"review", "sub"}
    assert children["review"]["activityType"] == "userTask"
    assert children["review"]["activityName"] == "Review"
    sub = children["sub"]
    assert sub["activityType"] == "subProcess" and sub["parentActivityInstanceId"] == iid
    (inner,) = sub["childActivityInstances"]
    assert inner["activityId"] == "inner" and inner["parentActivityInstanceId"] == sub["id"]
    assert inner["processInstanceId"] == iid and inner["childTransitionInstances"] == []
    assert root["childTransitionInstances"] == []
    unknown = "00000000-0000-0000-0000-000000000001"
    assert c.get(f"/process-instance/{unknown}/activity-instances").status_code == 404


def test_who_may_read_and_change(world: dict[str, object]) -> None:
    iid = world["w1"]
    viewer, starter = _c(world, "pi-viewer"), _c(world, "pi-starter")
    assert viewer.get("/process-instance").status_code == 200
    assert viewer.get(f"/process-instance/{iid}/variables").status_code == 200
    assert starter.get("/process-instance").status_code == 403
    for client in (viewer, starter):
        assert client.delete(f"/process-instance/{iid}").status_code == 403
        put = client.put(f"/process-instance/{iid}/variables/x", json={"value": 1})
        assert put.status_code == 403
        assert client.post(f"/process-instance/{iid}/variables", json={}).status_code == 403
    assert "x" not in _c(world).get(f"/process-instance/{iid}/variables").json()


def test_with_incident_and_incident_id(world: dict[str, object], server: Server) -> None:
    c = _c(world)
    server.runtime.engine.deploy_bpmn(error_boundary_bpmn("pi_fail", "pi-fail"))
    iid = str(server.runtime.engine.start("pi_fail", {}, business_key="pi-fail-1").id)
    server.runtime.run_until_idle(timeout=5)
    fetch = {
        "workerId": "w",
        "maxTasks": 1,
        "topics": [{"topicName": "pi-fail", "lockDuration": 9000}],
    }
    (task,) = c.post("/external-task/fetchAndLock", json=fetch).json()
    failed = c.post(
        f"/external-task/{task['id']}/failure", json={"workerId": "w", "errorMessage": "boom"}
    )
    assert failed.status_code == 204
    assert _ids(c.get("/process-instance", params={"withIncident": "true"})) == {iid}
    (incident,) = server.runtime.engine.show(iid)["incidents"]
    by_id = c.get("/process-instance", params={"incidentId": incident["id"]})
    assert _ids(by_id) == {iid}
    unknown = "00000000-0000-0000-0000-000000000001"
    assert c.get("/process-instance", params={"incidentId": unknown}).json() == []


def test_filters_that_filter_nothing_are_accepted_whatever_their_name(
    world: dict[str, object],
) -> None:
    c = _c(world)
    waiting = {"processDefinitionKey": "pi_wait", "businessKey": "pi-1"}
    expected = {world["w1"]}
    got = c.get(
        "/process-instance", params={**waiting, "tenantIdIn": "", "withoutTenantId": "false"}
    )
    assert _ids(got) == expected
    body: dict[str, object] = {
        **waiting,
        "tenantIdIn": [],
        "rootProcessInstances": False,
        "activityIdIn": None,
    }
    assert _ids(c.post("/process-instance", json=body)) == expected
    assert c.get("/deployment", params={"tenantIdIn": ""}).status_code == 200
    assert c.get("/process-definition", params={"withoutTenantId": "false"}).status_code == 200


CALLING = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="pi_calls" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:callActivity id="call" calledElement="pi_wait">
      <bpmn:extensionElements><camunda:in variables="all" /></bpmn:extensionElements>
    </bpmn:callActivity>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="call" />
    <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_super_and_sub_process_instance_follow_a_call(
    world: dict[str, object], server: Server
) -> None:
    c = _c(world)
    server.runtime.engine.deploy_bpmn(CALLING)
    parent = str(server.runtime.engine.start("pi_calls", {"amount": 1, "tier": "t"}).id)
    server.runtime.run_until_idle(timeout=5)
    (child,) = _ids(c.get("/process-instance", params={"superProcessInstance": parent}))
    tree = c.get(f"/process-instance/{parent}/activity-instances").json()
    (call,) = tree["childActivityInstances"]
    assert (call["activityId"], call["activityType"]) == ("call", "callActivity")
    assert _ids(c.get("/process-instance", params={"subProcessInstance": child})) == {parent}
    body = {"superProcessInstance": parent}
    assert _ids(c.post("/process-instance", json=body)) == {child}
    roots = _ids(c.get("/process-instance", params={"rootProcessInstances": "true"}))
    assert parent in roots and child not in roots
    assert server.runtime.engine.show(child)["called_by"]["instance"] == parent
    history = c.get("/history/process-instance", params={"superProcessInstanceId": parent})
    assert [h["id"] for h in history.json()] == [child]
    (mine,) = history.json()
    assert (mine["superProcessInstanceId"], mine["rootProcessInstanceId"]) == (parent, parent)
    up = c.get("/history/process-instance", params={"subProcessInstanceId": child}).json()
    assert [h["id"] for h in up] == [parent] and up[0]["superProcessInstanceId"] is None
    c.delete(f"/process-instance/{parent}")
    assert c.get(f"/process-instance/{child}").status_code == 404  # cancelled with its caller


def test_activity_instances_of_a_multi_instance_activity(
    world: dict[str, object], server: Server
) -> None:
    """Camunda's tree: ``X#multiInstanceBody`` with one child per live iteration (an
    iteration of a subprocess holds its own inner activity)."""
    body = ProcessBuilder("ignored").start("s").user_task("inner").end("e")
    doc = (
        ProcessBuilder("pi_mi")
        .start()
        .user_task("each", multi_instance={"cardinality": 3})
        .sub_process("sub", body.sequence("s", "inner", "e"), multi_instance={"cardinality": 2})
        .end()
        .sequence("start", "each", "end")
        .build()
    )
    doc["flows"].append({"id": "f_sub", "source": "start", "target": "sub"})
    doc["flows"].append({"id": "f_sub_end", "source": "sub", "target": "end"})
    rt = server.runtime
    rt.engine.deploy(doc)
    iid = str(rt.engine.start("pi_mi", {}).id)
    rt.run_until_idle(timeout=5)
    got = _c(world).get(f"/process-instance/{iid}/activity-instances")
    assert got.status_code == 200, got.text
    children = {a["activityId"]: a for a in got.json()["childActivityInstances"]}
    assert set(children) == {"each#multiInstanceBody", "sub#multiInstanceBody"}
    each = children["each#multiInstanceBody"]
    assert each["activityType"] == "multiInstanceBody"
    assert each["id"].startswith("each#multiInstanceBody:")
    iterations = each["childActivityInstances"]
    assert [i["activityId"] for i in iterations] == ["each"] * 3
    assert {i["parentActivityInstanceId"] for i in iterations} == {each["id"]}
    subs = children["sub#multiInstanceBody"]["childActivityInstances"]
    assert [s["activityType"] for s in subs] == ["subProcess"] * 2
    assert [[a["activityId"] for a in s["childActivityInstances"]] for s in subs] == [
        ["inner"],
        ["inner"],
    ]


def test_delete_runs_the_process_end_listeners_unless_told_to_skip_them(
    world: dict[str, object], server: Server
) -> None:
    listener = (
        '<bpmn:extensionElements><camunda:executionListener event="end" '
        "expression=\"${execution.setVariable('closed', true)}\" /></bpmn:extensionElements>"
    )
    body = '<bpmn:startEvent id="S" /><bpmn:userTask id="U" /><bpmn:endEvent id="E" />'
    server.runtime.engine.deploy_bpmn(
        modeler_file("pi_closing", listener + body + chain("S", "U", "E"))
    )
    c = _c(world)
    engine = server.runtime.engine
    heard = str(engine.start("pi_closing", {}).id)
    assert c.delete(f"/process-instance/{heard}").status_code == 204
    server.runtime.run_until_idle(timeout=5)
    shown = engine.show(heard)
    assert shown["state"] == "CANCELLED" and shown["variables"]["closed"] is True
    skipped = str(engine.start("pi_closing", {}).id)
    got = c.delete(f"/process-instance/{skipped}", params={"skipCustomListeners": "true"})
    assert got.status_code == 204
    shown = engine.show(skipped)
    assert shown["state"] == "CANCELLED" and "closed" not in shown["variables"]
