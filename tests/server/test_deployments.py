"""``/deployment``: Camunda Modeler's Deploy button, byte for byte; several files as one
deployment, all or nothing; changed-only deploys; reading deployments and their files back."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bpm.states import Role
from tests.helpers.dmn import model
from tests.server.conftest import Server
from tests.server.processes import error_boundary_bpmn, message_bpmn
from tests.unit.test_bpmn_every_problem import SEVERAL

BOUNDARY = "--------------------------493286427118632805713794"


def modeler_body(name: str, filename: str, xml: str) -> bytes:
    """The body Camunda Modeler 5 sends (form-data's boundary, CRLF lines, the name and
    source parts, deploy-changed-only, the diagram as an octet stream)."""
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="deployment-name"\r\n\r\n{name}\r\n',
        f"--{BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="deployment-source"\r\n\r\nCamunda Modeler\r\n',
        f"--{BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="deploy-changed-only"\r\n\r\ntrue\r\n',
        f"--{BOUNDARY}\r\n"
        f'Content-Disposition: form-data; name="{filename}"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
        f"{xml}\r\n",
        f"--{BOUNDARY}--\r\n",
    ]
    return "".join(parts).encode()


MODELER_HEADERS = {
    "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
    "User-Agent": "Camunda Modeler",
}


@pytest.fixture(scope="module")
def clients(server: Server) -> Iterator[dict[str, httpx.Client]]:
    server.add("dep-viewer", Role.VIEWER)
    server.add("dep-starter", Role.STARTER)
    server.add("dep-worker", Role.WORKER)
    made = {n: server.client(n) for n in ("operator", "dep-viewer", "dep-starter", "dep-worker")}
    yield made
    for c in made.values():
        c.close()


def _versions(c: httpx.Client, key: str) -> list[int]:
    found = c.get("/process-definition", params={"key": key}).json()
    return sorted(d["version"] for d in found)


def test_modeler_deploy_button_then_the_same_body_again(
    clients: dict[str, httpx.Client],
) -> None:
    c = clients["operator"]
    xml = error_boundary_bpmn("modeler_p", "modeler-t")
    body = modeler_body("diagram_1", "diagram_1.bpmn", xml)
    first = c.post("/deployment/create", content=body, headers=MODELER_HEADERS)
    assert first.status_code == 200, first.text
    made = first.json()
    assert made["name"] == "diagram_1" and made["source"] == "Camunda Modeler"
    assert made["tenantId"] is None and made["deploymentTime"].endswith("+0000")
    assert made["links"][0]["href"].endswith(f"/deployment/{made['id']}")
    (definition,) = made["deployedProcessDefinitions"].values()
    assert definition["key"] == "modeler_p" and definition["version"] == 1
    assert definition["resource"] == "diagram_1.bpmn"
    assert definition["deploymentId"] == made["id"]
    assert definition["historyTimeToLive"] == 1
    assert made["deployedDecisionDefinitions"] is None
    assert _versions(c, "modeler_p") == [1]

    again = c.post("/deployment/create", content=body, headers=MODELER_HEADERS)
    assert again.status_code == 200, again.text
    same = again.json()
    assert same["id"] == made["id"]
    assert same["deployedProcessDefinitions"] is None
    assert same["deployedDecisionDefinitions"] is None
    assert _versions(c, "modeler_p") == [1]

    changed = xml.replace('id="work"', 'id="work" name="Work"')
    third = c.post(
        "/deployment/create",
        content=modeler_body("diagram_1", "diagram_1.bpmn", changed),
        headers=MODELER_HEADERS,
    )
    assert third.status_code == 200 and third.json()["id"] != made["id"]
    assert _versions(c, "modeler_p") == [1, 2]


def test_bpmn_dmn_and_a_form_are_one_deployment(clients: dict[str, httpx.Client]) -> None:
    c = clients["operator"]
    bpmn = message_bpmn("multi_p").encode()
    dmn = model("dish.dmn").encode()
    form = b'{"components": []}'
    files = [
        ("a", ("multi.bpmn20.xml", bpmn, "application/octet-stream")),
        ("b", ("dish.dmn", dmn, "application/octet-stream")),
        ("c", ("start.form", form, "application/octet-stream")),
    ]
    got = c.post("/deployment/create", data={"deployment-name": "multi"}, files=files)
    assert got.status_code == 200, got.text
    made = got.json()
    assert [d["key"] for d in made["deployedProcessDefinitions"].values()] == ["multi_p"]
    decisions = sorted(d["key"] for d in made["deployedDecisionDefinitions"].values())
    assert decisions == ["beverages", "dish"]
    resources = c.get(f"/deployment/{made['id']}/resources").json()
    assert sorted(r["name"] for r in resources) == ["dish.dmn", "multi.bpmn20.xml", "start.form"]
    by_name = {r["name"]: r for r in resources}
    data = c.get(f"/deployment/{made['id']}/resources/{by_name['dish.dmn']['id']}/data")
    assert data.status_code == 200 and data.content == dmn
    assert data.headers["content-type"].startswith("application/xml")
    one = c.get(f"/deployment/{made['id']}/resources/{by_name['start.form']['id']}")
    assert one.json() == {**by_name["start.form"], "deploymentId": made["id"]}
    # without deploy-changed-only every file is stored again, but no definition repeats
    again = c.post("/deployment/create", data={"deployment-name": "multi"}, files=files)
    assert again.status_code == 200 and again.json()["id"] != made["id"]
    assert again.json()["deployedProcessDefinitions"] is None
    assert _versions(c, "multi_p") == [1]


def test_a_refused_file_refuses_the_deployment_with_details_per_file(
    clients: dict[str, httpx.Client],
) -> None:
    c = clients["operator"]
    before = c.get("/deployment/count").json()["count"]
    good = message_bpmn("refused_good")
    bad = error_boundary_bpmn("refused_bad", "t").replace('targetRef="done"', 'targetRef="nope"')
    files = [
        ("x", ("good.bpmn", good.encode(), "application/octet-stream")),
        ("y", ("bad.bpmn", bad.encode(), "application/octet-stream")),
        ("z", ("broken.dmn", b"<definitions", "application/octet-stream")),
    ]
    got = c.post("/deployment/create", data={"deployment-name": "refused"}, files=files)
    assert got.status_code == 400
    body = got.json()
    assert body["type"] == "ParseException"
    assert set(body["details"]) == {"bad.bpmn", "broken.dmn"}
    (error,) = body["details"]["bad.bpmn"]["errors"]
    assert error["line"] == 14 and "nope" in error["message"]
    assert body["details"]["broken.dmn"]["errors"][0]["line"] == 1
    assert c.get("/deployment/count").json()["count"] == before
    assert _versions(c, "refused_good") == []


@pytest.mark.parametrize(
    ("data", "files", "needle"),
    [
        ({"tenant-id": "t1"}, [("f", ("a.bpmn", b"<x/>"))], "tenant"),
        ({"deployment-name": "none"}, None, "No deployment resources"),
        ({"deploy-changed-only": "maybe"}, [("f", ("a.bpmn", b"<x/>"))], "deploy-changed-only"),
        ({"other": "x"}, [("f", ("a.bpmn", b"<x/>"))], "'other'"),
    ],
)
def test_bad_forms_are_refused(
    clients: dict[str, httpx.Client],
    data: dict[str, str],
    files: list[tuple[str, tuple[str, bytes]]] | None,
    needle: str,
) -> None:
    c = clients["operator"]
    before = c.get("/deployment/count").json()["count"]
    if files is None:  # a multipart form with text parts only
        files = [("deployment-source", (None, b"x"))]  # type: ignore[list-item]
        data = {**data}
    got = c.post("/deployment/create", data=data, files=files)
    assert got.status_code == 400, got.text
    assert needle in got.json()["message"]
    assert c.get("/deployment/count").json()["count"] == before


def test_a_json_body_is_refused(clients: dict[str, httpx.Client]) -> None:
    got = clients["operator"].post("/deployment/create", json={"deployment-name": "x"})
    assert got.status_code == 400 and "multipart" in got.json()["message"]


def test_list_filters_sorting_and_paging(clients: dict[str, httpx.Client]) -> None:
    c = clients["operator"]
    for n in (1, 2, 3):
        files = [("f", (f"list{n}.bpmn", message_bpmn(f"list_p{n}").encode()))]
        got = c.post(
            "/deployment/create",
            data={"deployment-name": f"listing-{n}", "deployment-source": "tests"},
            files=files,
        )
        assert got.status_code == 200
    named = c.get(
        "/deployment", params={"nameLike": "listing-%", "sortBy": "name", "sortOrder": "desc"}
    )
    assert [d["name"] for d in named.json()] == ["listing-3", "listing-2", "listing-1"]
    page = c.get(
        "/deployment",
        params={
            "nameLike": "listing-%",
            "sortBy": "name",
            "sortOrder": "asc",
            "firstResult": 1,
            "maxResults": 1,
        },
    )
    assert [d["name"] for d in page.json()] == ["listing-2"]
    first = named.json()[2]
    assert c.get("/deployment", params={"id": first["id"]}).json() == [first]
    assert c.get("/deployment", params={"name": "listing-1", "source": "tests"}).json() == [first]
    after = c.get("/deployment", params={"nameLike": "listing-%", "after": first["deploymentTime"]})
    assert {d["name"] for d in after.json()} == {"listing-2", "listing-3"}
    before = c.get(
        "/deployment/count", params={"nameLike": "listing-%", "before": first["deploymentTime"]}
    )
    assert before.json() == {"count": 0}
    assert c.get("/deployment/count", params={"nameLike": "listing-%"}).json() == {"count": 3}
    assert c.get(f"/deployment/{first['id']}").json() == first
    assert c.get("/deployment", params={"id": "not-an-id"}).json() == []


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"sortBy": "name"}, "sortBy and sortOrder"),
        ({"sortBy": "tenantId", "sortOrder": "asc"}, "tenantId"),
        ({"tenantIdIn": "a"}, "tenantIdIn"),
        ({"after": "yesterday"}, "yesterday"),
        ({"maxResults": "5000"}, "maxResults"),
    ],
)
def test_bad_list_parameters_are_refused(
    clients: dict[str, httpx.Client], params: dict[str, str], needle: str
) -> None:
    got = clients["operator"].get("/deployment", params=params)
    assert got.status_code == 400 and needle in got.json()["message"]


def test_unknown_deployments_and_resources_are_404(clients: dict[str, httpx.Client]) -> None:
    c = clients["operator"]
    unknown = "00000000-0000-0000-0000-000000000001"
    for path in (
        f"/deployment/{unknown}",
        "/deployment/nope",
        f"/deployment/{unknown}/resources",
        f"/deployment/{unknown}/resources/{unknown}/data",
    ):
        got = c.get(path)
        assert got.status_code == 404, path
        assert got.json()["type"] == "RestException"


def test_who_may_deploy_and_read(clients: dict[str, httpx.Client]) -> None:
    files = [("f", ("auth.bpmn", message_bpmn("auth_dep").encode()))]
    for name in ("dep-viewer", "dep-starter", "dep-worker"):
        got = clients[name].post("/deployment/create", data={}, files=files)
        assert got.status_code == 403, name
    assert clients["dep-viewer"].get("/deployment").status_code == 200
    for name in ("dep-starter", "dep-worker"):
        assert clients[name].get("/deployment").status_code == 403, name
    assert _versions(clients["operator"], "auth_dep") == []


def test_delete_only_a_deployment_nothing_was_started_from(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    c = clients["operator"]

    def deploy(key: str) -> str:
        files = [("f", (f"{key}.bpmn", message_bpmn(key).encode()))]
        got = c.post("/deployment/create", data={"deployment-name": key}, files=files)
        assert got.status_code == 200
        return str(got.json()["id"])

    unused, used = deploy("del_unused"), deploy("del_used")
    server.runtime.engine.start("del_used", {})
    refused = c.delete(f"/deployment/{used}")
    assert refused.status_code == 400 and "1 process instance" in refused.json()["message"]
    assert c.delete(f"/deployment/{unused}", params={"cascade": "true"}).status_code == 400
    assert clients["dep-viewer"].delete(f"/deployment/{unused}").status_code == 403
    assert c.delete(f"/deployment/{unused}").status_code == 204
    assert c.get(f"/deployment/{unused}").status_code == 404
    assert _versions(c, "del_unused") == []
    assert c.delete(f"/deployment/{unused}").status_code == 404
    assert _versions(c, "del_used") == [1]


def test_a_refused_deployment_lists_every_problem_of_every_process(
    clients: dict[str, httpx.Client],
) -> None:
    c = clients["operator"]
    files = [("x", ("several.bpmn", SEVERAL.encode(), "application/octet-stream"))]
    got = c.post("/deployment/create", data={"deployment-name": "several"}, files=files)
    assert got.status_code == 400
    errors = got.json()["details"]["several.bpmn"]["errors"]
    assert [e["line"] for e in errors] == [5, 7, 13, 14, 21, 22]
    assert "unreachable" in errors[1]["message"] and "second startEvent" in errors[2]["message"]
    assert "B_g" in errors[3]["message"]
    assert _versions(c, "A") == [] and _versions(c, "B") == []
