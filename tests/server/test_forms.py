"""The forms of tasks and start events against a real server: ``/task/{id}/deployed-form`` and
``/process-definition/.../startForm``, ``/form-variables``, ``/deployed-start-form``; a Camunda
Form found by key, and by reference bound to the deployment, the latest or a version."""

from __future__ import annotations

import json

import pytest

from bpm.api import Resource, kind_of
from bpm.states import Role
from tests.helpers.modeler import chain, modeler_file
from tests.server.conftest import Server

KEY = "fm_ship"


def form(version: str) -> dict[str, object]:
    return {
        "id": "fmShip",
        "type": "default",
        "components": [{"type": "textfield", "key": "address", "label": f"Address {version}"}],
    }


def bpmn(binding: str, extra: str = "") -> str:
    body = f"""    <bpmn:startEvent id="start">
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="parcels" label="Parcels" type="long" defaultValue="2" />
          <camunda:formField id="express" label="Express" type="boolean" defaultValue="true" />
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:startEvent>
    <bpmn:userTask id="keyed" camunda:formKey="camunda-forms:deployment:ship.form" />
    <bpmn:userTask id="referenced" camunda:formRef="fmShip"
        camunda:formRefBinding="{binding}"{extra} />
    <bpmn:endEvent id="done" />
""" + chain("start", "keyed", "referenced", "done")
    return modeler_file(KEY, body, attrs=' camunda:historyTimeToLive="P1D"')


def deploy(server: Server, binding: str, version: str, extra: str = "") -> None:
    server.runtime.engine.deploy_files(
        [
            Resource("ship.bpmn", bpmn(binding, extra).encode(), kind_of("ship.bpmn")),
            Resource("ship.form", json.dumps(form(version)).encode(), kind_of("ship.form")),
        ]
    )


@pytest.fixture(scope="module")
def viewer(server: Server) -> Server:
    server.add("viewer", Role.VIEWER)
    return server


def _task_at(server: Server, node: str, binding: str, extra: str = "") -> str:
    started = server.runtime.engine.start(KEY, {})
    server.runtime.run_until_idle(timeout=5)
    engine = server.runtime.engine
    (task,) = engine.user_tasks(instance_id=started.id)
    if node == "referenced":
        engine.complete_user_task(task["id"], {})
        server.runtime.run_until_idle(timeout=5)
        (task,) = engine.user_tasks(instance_id=started.id)
    return str(task["id"])


def test_start_form_and_its_defaults(viewer: Server) -> None:
    deploy(viewer, "deployment", "v1")
    with viewer.client("viewer") as c:
        assert c.get(f"/process-definition/key/{KEY}/startForm").json() == {
            "key": None, "camundaFormRef": None, "contextPath": None,
        }  # fmt: skip
        got = c.get(f"/process-definition/key/{KEY}/form-variables").json()
        assert got["parcels"]["value"] == 2 and got["parcels"]["type"] == "Long"
        assert got["express"] == {"type": "Boolean", "value": True, "valueInfo": {}}
        some = c.get(
            f"/process-definition/key/{KEY}/form-variables", params={"variableNames": "express"}
        )
        assert list(some.json()) == ["express"]
        none = c.get(f"/process-definition/key/{KEY}/deployed-start-form")
        assert none.status_code == 400 and "not a deployed form" in none.json()["message"]


def test_deployed_forms_by_key_and_reference(viewer: Server) -> None:
    deploy(viewer, "deployment", "v1")
    deploy(viewer, "latest", "v2")
    deploy(viewer, "version", "v3", ' camunda:formRefVersion="1"')
    with viewer.client("viewer") as c:
        keyed = c.get(f"/task/{_task_at(viewer, 'keyed', 'version')}/deployed-form")
        assert keyed.status_code == 200 and keyed.headers["content-type"].startswith(
            "application/json"
        )
        assert keyed.json()["components"][0]["label"] == "Address v3"
        assert "sandbox" in keyed.headers["content-security-policy"]
        # formRefVersion 1: the first deployment of the form's id, whatever came after.
        by_version = c.get(f"/task/{_task_at(viewer, 'referenced', 'version')}/deployed-form")
        assert by_version.json()["components"][0]["label"] == "Address v1"
        assert c.get("/task/7e0c8b8e-3b1c-4a8e-9a49-0a4b5e8e9f10/deployed-form").status_code == 404
    engine = viewer.runtime.engine
    definition = engine.process_definition(key=KEY).id
    for binding, label in (("latest", "Address v3"), ("deployment", "Address v3")):
        found = engine.deployed_form({"ref": {"id": "fmShip", "binding": binding}}, definition)
        assert json.loads(found.content)["components"][0]["label"] == label, binding
