"""``/process-definition``: lists and their filters, one definition by id (bpm's, or
Camunda's ``key:version:uuid``) or key, its XML, and starts: typed variables, business key,
``withVariablesInReturn``, the ``Idempotency-Key`` header, and who may start what."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.processes import error_boundary_bpmn, message_bpmn


@pytest.fixture(scope="module")
def defs(server: Server) -> Iterator[dict[str, object]]:
    """pd_a in two versions (the second with a version tag), pd_b once."""
    rt = server.runtime
    (a1,) = rt.engine.deploy_bpmn(message_bpmn("pd_a"))
    tagged = message_bpmn("pd_a").replace(
        'camunda:historyTimeToLive="P1D"', 'camunda:historyTimeToLive="P1D" camunda:versionTag="v2"'
    )
    (a2,) = rt.engine.deploy_bpmn(tagged)
    (b1,) = rt.engine.deploy_bpmn(error_boundary_bpmn("pd_b", "pd-topic"))
    server.add("pd-viewer", Role.VIEWER)
    server.add("pd-starter", Role.STARTER)
    server.add("pd-only-b", Role.STARTER, processes=("pd_b",))
    server.add("pd-worker", Role.WORKER)
    names = ("operator", "pd-viewer", "pd-starter", "pd-only-b", "pd-worker")
    clients = {n: server.client(n) for n in names}
    yield {"a1": str(a1.id), "a2": str(a2.id), "b1": str(b1.id), **clients}
    for c in clients.values():
        c.close()


def _c(defs: dict[str, object], name: str = "operator") -> httpx.Client:
    client = defs[name]
    assert isinstance(client, httpx.Client)
    return client


def _keys(got: httpx.Response) -> list[tuple[str, int]]:
    assert got.status_code == 200, got.text
    return [(d["key"], d["version"]) for d in got.json()]


def test_lists_filter_sort_and_page(defs: dict[str, object]) -> None:
    c = _c(defs)
    mine = {"keyLike": "pd\\_%"}
    assert _keys(c.get("/process-definition", params=mine)) == [
        ("pd_a", 1),
        ("pd_a", 2),
        ("pd_b", 1),
    ]
    latest = c.get("/process-definition", params={**mine, "latestVersion": "true"})
    assert _keys(latest) == [("pd_a", 2), ("pd_b", 1)]
    assert _keys(c.get("/process-definition", params={"key": "pd_a", "version": "1"})) == [
        ("pd_a", 1)
    ]
    assert _keys(c.get("/process-definition", params={"versionTag": "v2"})) == [("pd_a", 2)]
    ids = f"{defs['a1']},{defs['b1']}"
    assert _keys(c.get("/process-definition", params={"processDefinitionIdIn": ids})) == [
        ("pd_a", 1),
        ("pd_b", 1),
    ]
    desc = c.get(
        "/process-definition",
        params={**mine, "sortBy": "version", "sortOrder": "desc", "maxResults": "1"},
    )
    assert _keys(desc) == [("pd_a", 2)]
    one = c.get(f"/process-definition/{defs['a2']}").json()
    deployment = one["deploymentId"]
    by_deployment = c.get("/process-definition", params={"deploymentId": deployment})
    assert _keys(by_deployment) == [("pd_a", 2)]
    assert c.get("/process-definition/count", params=mine).json() == {"count": 3}
    assert c.get("/process-definition/count", params={"keysIn": "pd_a,pd_b"}).json() == {"count": 3}
    assert c.get("/process-definition", params={"processDefinitionId": "nope"}).json() == []


def test_one_definition_by_id_key_and_camunda_id(defs: dict[str, object]) -> None:
    c = _c(defs)
    got = c.get(f"/process-definition/{defs['a2']}")
    assert got.status_code == 200
    body = got.json()
    assert body["id"] == defs["a2"] and body["key"] == "pd_a" and body["version"] == 2
    assert body["versionTag"] == "v2" and body["suspended"] is False
    assert body["tenantId"] is None and body["historyTimeToLive"] == 1
    assert body["resource"] == "pd_a.bpmn"
    assert c.get(f"/process-definition/pd_a:2:{defs['a2']}").json() == body
    assert c.get("/process-definition/key/pd_a").json() == body
    xml = c.get(f"/process-definition/{defs['a2']}/xml").json()
    assert xml["id"] == defs["a2"] and 'camunda:versionTag="v2"' in xml["bpmn20Xml"]
    assert c.get("/process-definition/key/pd_a/xml").json() == xml


@pytest.mark.parametrize(
    "path",
    [
        "/process-definition/00000000-0000-0000-0000-000000000001",
        "/process-definition/not-an-id",
        "/process-definition/pd_a:7:{a2}",
        "/process-definition/key/no_such_key",
        "/process-definition/key/no_such_key/xml",
    ],
)
def test_unknown_definitions_are_404(defs: dict[str, object], path: str) -> None:
    got = _c(defs).get(path.format(a2=defs["a2"]))
    assert got.status_code == 404 and got.json()["type"] == "RestException"


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"suspended": "true"}, "suspended"),
        ({"tenantIdIn": "t"}, "tenantIdIn"),
        ({"sortBy": "category", "sortOrder": "asc"}, "category"),
        ({"version": "two"}, "version"),
    ],
)
def test_bad_list_parameters_are_refused(
    defs: dict[str, object], params: dict[str, str], needle: str
) -> None:
    got = _c(defs).get("/process-definition", params=params)
    assert got.status_code == 400 and needle in got.json()["message"]


def test_start_by_key_with_typed_variables(defs: dict[str, object], server: Server) -> None:
    c = _c(defs, "pd-starter")
    body = {
        "businessKey": "order-1",
        "variables": {
            "amount": {"value": "42", "type": "Integer"},
            "customer": {"value": '{"name": "Ann"}', "type": "Json"},
        },
        "withVariablesInReturn": True,
    }
    got = c.post("/process-definition/key/pd_a/start", json=body)
    assert got.status_code == 200, got.text
    started = got.json()
    assert started["definitionId"] == defs["a2"] and started["businessKey"] == "order-1"
    assert started["ended"] is False and started["suspended"] is False
    assert started["variables"]["amount"] == {"type": "Integer", "value": 42, "valueInfo": {}}
    assert started["variables"]["customer"]["type"] == "Json"
    assert started["links"][0]["href"].endswith(f"/process-instance/{started['id']}")
    assert server.runtime.engine.show(started["id"])["variables"]["customer"] == {"name": "Ann"}
    again = c.post("/process-definition/key/pd_a/start", json=body).json()
    assert again["id"] == started["id"]  # the business key names the start


def test_start_by_id_and_the_idempotency_key(defs: dict[str, object]) -> None:
    c = _c(defs)
    path = f"/process-definition/{defs['a1']}/start"
    first = c.post(path, json={}, headers={"Idempotency-Key": "once-1"})
    assert first.status_code == 200, first.text
    assert first.json()["definitionId"] == defs["a1"] and "variables" not in first.json()
    same = c.post(path, json={}, headers={"Idempotency-Key": "once-1"})
    assert same.json()["id"] == first.json()["id"]
    other = c.post(path, json={}, headers={"Idempotency-Key": "once-2"})
    assert other.json()["id"] != first.json()["id"]
    camunda_id = c.post(f"/process-definition/pd_a:1:{defs['a1']}/start", json={})
    assert camunda_id.status_code == 200


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"variables": {"n": {"value": "x", "type": "Integer"}}}, "'n'"),
        ({"variables": {"f": {"value": "AA==", "type": "File"}}}, "File"),
        # A plain value: the answer names the variable and shows the typed object meant.
        ({"variables": {"amount": 5}}, "variables.amount"),
        ({"variables": {"amount": 5}}, '{"value": 5, "type": "Integer"}'),
        ({"variables": {"items": ["lamp"]}}, '"type": "Json"'),
        # A type name with a typo: the types there are, and the one meant.
        ({"variables": {"s": {"value": "x", "type": "Strng"}}}, "did you mean 'String'?"),
        ({"variables": {"s": {"value": "x", "type": "Strng"}}}, "String, Integer, Long"),
        ({"startInstructions": [{"type": "startBeforeActivity"}]}, "startInstructions"),
        ({"skipCustomListeners": True}, "skipCustomListeners"),
        ({"businessKey": ""}, "business key"),
    ],
)
def test_bad_starts_are_refused_and_start_nothing(
    defs: dict[str, object], server: Server, body: dict[str, object], needle: str
) -> None:
    before = len(server.runtime.engine.find_instances(key="pd_b", limit=1000))
    got = _c(defs).post("/process-definition/key/pd_b/start", json=body)
    assert got.status_code == 400, got.text
    assert needle in got.json()["message"]
    assert len(server.runtime.engine.find_instances(key="pd_b", limit=1000)) == before


def test_unknown_key_start_is_404(defs: dict[str, object]) -> None:
    got = _c(defs).post("/process-definition/key/no_such_key/start", json={})
    assert got.status_code == 404
    assert "No matching process definition with key: no_such_key" in got.json()["message"]


def test_who_may_read_and_start(defs: dict[str, object]) -> None:
    assert _c(defs, "pd-viewer").get("/process-definition").status_code == 200
    for name in ("pd-starter", "pd-worker"):
        assert _c(defs, name).get("/process-definition").status_code == 403, name
    for name in ("pd-viewer", "pd-worker"):
        got = _c(defs, name).post("/process-definition/key/pd_b/start", json={})
        assert got.status_code == 403, name
    only_b = _c(defs, "pd-only-b")
    assert only_b.post("/process-definition/key/pd_a/start", json={}).status_code == 403
    by_id = only_b.post(f"/process-definition/{defs['a1']}/start", json={})
    assert by_id.status_code == 403
    assert only_b.post("/process-definition/key/pd_b/start", json={}).status_code == 200


def test_a_start_is_refused_when_a_handler_or_bean_it_calls_is_missing(
    defs: dict[str, object], server: Server
) -> None:
    """The server runs the steps itself (no broker): a listener's handler or an
    expression's bean that no imported module registers refuses the start, as ``bpm
    start`` does, before any instance exists."""
    server.runtime.engine.deploy(
        {
            "key": "pd_needs_bean",
            "nodes": [
                {"id": "s", "type": "startEvent"},
                {
                    "id": "t",
                    "type": "serviceTask",
                    "expression": "${creditService.check(execution)}",
                    "listeners": [{"event": "start", "handler": "pd_missing_listener"}],
                },
                {"id": "e", "type": "endEvent"},
            ],
            "flows": [
                {"id": "f1", "source": "s", "target": "t"},
                {"id": "f2", "source": "t", "target": "e"},
            ],
        }
    )
    got = _c(defs).post("/process-definition/key/pd_needs_bean/start", json={})
    assert got.status_code == 400, got.text
    message = got.json()["message"]
    assert "bean 'creditService'" in message and "handler 'pd_missing_listener'" in message
    assert server.runtime.engine.find_instances(key="pd_needs_bean", limit=10) == []


def test_submit_form_checks_the_start_form_and_start_does_not(
    defs: dict[str, object], server: Server
) -> None:
    """Camunda's ``submit-form`` submits the start form (checked, defaults filled, its
    business key field read); ``start`` is ``startProcessInstanceByKey`` and checks nothing."""
    server.runtime.engine.deploy(
        {
            "key": "pd_form",
            "nodes": [
                {
                    "id": "s",
                    "type": "startEvent",
                    "form": {
                        "businessKey": "ref",
                        "fields": [
                            {"id": "ref", "validation": {"required": True}},
                            {"id": "amount", "type": "long", "defaultValue": 10},
                        ],
                    },
                },
                {"id": "u", "type": "userTask"},
                {"id": "e", "type": "endEvent"},
            ],
            "flows": [
                {"id": "f1", "source": "s", "target": "u"},
                {"id": "f2", "source": "u", "target": "e"},
            ],
        }
    )
    c = _c(defs)
    refused = c.post("/process-definition/key/pd_form/submit-form", json={"variables": {}})
    assert refused.status_code == 400, refused.text
    assert "field 'ref' is required" in refused.json()["message"]
    body = {"variables": {"ref": {"value": "PO-7", "type": "String"}}}
    got = c.post("/process-definition/key/pd_form/submit-form", json=body)
    assert got.status_code == 200, got.text
    assert got.json()["businessKey"] == "PO-7"
    shown = server.runtime.engine.show(got.json()["id"])
    assert shown["variables"] == {"ref": "PO-7", "amount": 10}
    plain = c.post("/process-definition/key/pd_form/start", json={"variables": {}})
    assert plain.status_code == 200, plain.text
    assert server.runtime.engine.show(plain.json()["id"])["variables"] == {}
