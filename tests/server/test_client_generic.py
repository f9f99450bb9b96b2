"""The OpenAPI-generated ``generic-camunda-client`` (PyPI, unmodified) against ``bpm serve``:
deploying, starting, the external-task cycle, messages, user tasks, incidents, the activity
tree, and the engine's name and version. Each scenario runs in the client's own virtualenv
(outside the repository) and fails on the first call that raises.

The client is given its credentials as ``configuration.username``/``password``; its generated
operations name no auth setting, so it never sends them by itself: the scenarios also put its
own ``get_basic_auth_token()`` into a default header, and one scenario shows the former alone is
refused."""

from __future__ import annotations

import pytest

from tests.server.client_scripts import ScriptClient, prepare, run
from tests.server.clients import generic_client
from tests.server.conftest import Server

SCRIPT = r"""
import os, sys, uuid
import generic_camunda_client as gc
from generic_camunda_client.rest import ApiException

config = gc.Configuration(host=os.environ["BASE"])
config.username = os.environ["USER_NAME"]
config.password = os.environ["PASSWORD"]
client = gc.ApiClient(config)
if sys.argv[1] != "configuration_only":
    client.set_default_header("Authorization", config.get_basic_auth_token())


def start(key, **variables):
    body = gc.StartProcessInstanceDto(
        business_key=uuid.uuid4().hex,
        variables={k: gc.VariableValueDto(value=v) for k, v in variables.items()},
    )
    return gc.ProcessDefinitionApi(client).start_process_instance_by_key(
        key, start_process_instance_dto=body
    )


def locked(instance, api):
    topic = gc.FetchExternalTaskTopicDto(topic_name="gc-topic", lock_duration=60000)
    body = gc.FetchExternalTasksDto(worker_id="gc", max_tasks=10, topics=[topic])
    tasks = [t for t in api.fetch_and_lock(fetch_external_tasks_dto=body)
             if t.process_instance_id == instance.id]
    assert len(tasks) == 1, tasks
    return tasks[0]


def definitions():
    api = gc.DeploymentApi(client)
    made = api.create_deployment(deployment_name="generic", data=os.environ["BPMN"])
    assert api.get_deployment(made.id).name == "generic"
    assert api.get_deployments_count(name="generic").count >= 1
    defs = gc.ProcessDefinitionApi(client)
    found = defs.get_process_definition_by_key("gc_ext")
    assert found.key == "gc_ext"
    assert defs.get_process_definitions_count(key="gc_ext").count >= 1
    assert [d.id for d in defs.get_process_definitions(key="gc_ext", latest_version=True)] == [
        found.id
    ]


def instances():
    instance = start("gc_ext", amount=5)
    api = gc.ProcessInstanceApi(client)
    assert api.get_process_instance(instance.id).id == instance.id
    assert api.get_process_instance_variable(instance.id, "amount").value == 5
    assert api.get_process_instances_count(business_key=instance.business_key).count == 1
    tree = api.get_activity_instance_tree(instance.id)
    assert [c.activity_id for c in tree.child_activity_instances] == ["work"]
    api.delete_process_instance(instance.id)


def external_tasks():
    api = gc.ExternalTaskApi(client)
    instance = start("gc_ext")
    held = locked(instance, api)
    api.extend_lock(held.id, extend_lock_on_external_task_dto=gc.ExtendLockOnExternalTaskDto(
        worker_id="gc", new_duration=30000))
    api.unlock(held.id)
    held = locked(instance, api)
    assert api.get_external_tasks_count(process_instance_id=instance.id).count == 1
    assert api.get_external_task(held.id).worker_id == "gc"
    api.handle_failure(held.id, external_task_failure_dto=gc.ExternalTaskFailureDto(
        worker_id="gc", error_message="down", error_details="trace", retries=0, retry_timeout=0))
    assert api.get_external_task_error_details(held.id) == "trace"
    (incident,) = gc.IncidentApi(client).get_incidents(process_instance_id=instance.id)
    assert incident.incident_message == "down"
    api.set_external_task_resource_retries(held.id, retries_dto=gc.RetriesDto(retries=1))
    held = locked(instance, api)
    api.complete_external_task_resource(held.id, complete_external_task_dto=(
        gc.CompleteExternalTaskDto(worker_id="gc",
                                   variables={"done": gc.VariableValueDto(value=True)})))
    other = start("gc_ext")
    held = locked(other, api)
    api.handle_external_task_bpmn_error(held.id, external_task_bpmn_error=gc.ExternalTaskBpmnError(
        worker_id="gc", error_code="E1", error_message="nothing left"))


def messages():
    instance = start("gc_msg")
    body = gc.CorrelationMessageDto(message_name="gc-paid", business_key=instance.business_key,
                                    result_enabled=True)
    (result,) = gc.MessageApi(client).deliver_message(correlation_message_dto=body)
    assert result.execution.process_instance_id == instance.id


def user_tasks():
    instance = start("gc_sign")
    api = gc.TaskApi(client)
    (task,) = api.get_tasks(process_instance_id=instance.id)
    assert api.get_task(task.id).task_definition_key == "sign"
    assert api.get_tasks_count(process_instance_id=instance.id).count == 1
    api.unclaim(task.id)
    api.claim(task.id, user_id_dto=gc.UserIdDto(user_id="ann"))
    # 204 without a body, as Camunda answers: the client would read its declared variable
    # map from it and fail, so the raw answer is read
    done = api.complete(task.id, complete_task_dto=gc.CompleteTaskDto(
        variables={"signed": gc.VariableValueDto(value=True)}), _preload_content=False)
    assert done.status == 204


def engine():
    assert [e.name for e in gc.EngineApi(client).get_process_engine_names()] == ["default"]
    assert gc.VersionApi(client).get_rest_api_version().version


def configuration_only():
    try:
        gc.VersionApi(client).get_rest_api_version()
    except ApiException as exc:
        raise AssertionError(f"refused: {exc.status}") from None


globals()[sys.argv[1]]()
print("ok")
"""

SCENARIOS = [
    "definitions",
    "instances",
    "external_tasks",
    "messages",
    "user_tasks",
    "engine",
    pytest.param(
        "configuration_only",
        marks=pytest.mark.xfail(
            strict=True,
            reason="generic-camunda-client 7.18.0's operations name no auth setting"
            " (auth_settings = []), so configuration.username/password are never sent: 401",
        ),
    ),
]


@pytest.fixture(scope="module")
def generic(server: Server, tmp_path_factory: pytest.TempPathFactory) -> ScriptClient:
    python = generic_client()
    return prepare(server, tmp_path_factory, python, user="generic", prefix="gc", script=SCRIPT)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_generic_calls(server: Server, generic: ScriptClient, scenario: str) -> None:
    run(server, generic, scenario)
