"""pycamunda (PyPI, unmodified) against ``bpm serve`` for every call whose endpoint bpm serves:
deployments, definitions, starts, instances and their variables, external tasks, messages,
user tasks, incidents, statistics, filters, identity links, assignees and comments. Each
scenario runs in pycamunda's own virtualenv (outside the repository) and fails on the first
call that raises."""

from __future__ import annotations

import pytest

from tests.server.client_scripts import ScriptClient, prepare, run
from tests.server.clients import pycamunda_client
from tests.server.conftest import Server

SCRIPT = r"""
import os, sys, uuid
import requests.auth
import pycamunda.deployment as deployment
import pycamunda.externaltask as externaltask
import pycamunda.filter as taskfilter
import pycamunda.incident as incident
import pycamunda.message as message
import pycamunda.processdef as processdef
import pycamunda.processinst as processinst
import pycamunda.task as task
import pycamunda.version as version

URL = os.environ["BASE"]
AUTH = requests.auth.HTTPBasicAuth(os.environ["USER_NAME"], os.environ["PASSWORD"])


def call(request):
    request.auth = AUTH
    return request()


def start(key, **variables):
    starting = processdef.StartInstance(URL, key=key, business_key=uuid.uuid4().hex)
    for name, value in variables.items():
        starting.add_variable(name, value)
    return call(starting)


def locked(instance):
    fetch = externaltask.FetchAndLock(URL, worker_id="pc", max_tasks=10)
    fetch.add_topic("pc-topic", lock_duration=60000)
    tasks = [t for t in call(fetch) if t.process_instance_id == instance.id_]
    assert len(tasks) == 1, tasks
    return tasks[0]


def definitions():
    made = deployment.Create(URL, name="pycamunda")
    made.add_resource(open(os.environ["BPMN"], "rb"))
    created = call(made)
    assert call(deployment.Get(URL, id_=created.id_)).name == "pycamunda"
    assert created.id_ in {d.id_ for d in call(deployment.GetList(URL, name="pycamunda"))}
    assert [r.name for r in call(deployment.GetResources(URL, id_=created.id_))] == ["pc.bpmn"]
    (found,) = call(processdef.GetList(URL, key="pc_ext", latest_version=True))
    assert call(processdef.Count(URL, key="pc_ext")) >= 1
    assert call(processdef.Get(URL, key="pc_ext")).id_ == found.id_
    assert "pc-topic" in call(processdef.GetXML(URL, id_=found.id_))


def instances():
    instance = start("pc_ext", amount=5)
    iid = instance.id_
    assert call(processinst.Get(URL, id_=instance.id_)).id_ == instance.id_
    listed = call(processinst.GetList(URL, business_key=instance.business_key))
    assert [i.id_ for i in listed] == [instance.id_]
    tree = call(processinst.GetActivityInstance(URL, id_=instance.id_))
    assert [c.activity_id for c in tree.child_activity_instances] == ["work"]
    amount = processinst.VariablesGet(URL, process_instance_id=iid, var_name="amount")
    assert call(amount).value == 5
    modify = processinst.VariablesModify(URL, process_instance_id=iid)
    modify.add_variable("seen", True)
    call(modify)
    assert call(processinst.VariablesGetList(URL, process_instance_id=iid))["seen"].value is True
    call(processinst.VariablesUpdate(URL, process_instance_id=iid, var_name="note", value="x"))
    call(processinst.VariablesDelete(URL, process_instance_id=iid, var_name="note"))
    assert "note" not in call(processinst.VariablesGetList(URL, process_instance_id=iid))
    call(processinst.Delete(URL, id_=instance.id_))


def variable_data():
    iid = start("pc_ext", amount=5).id_
    data = processinst.VariablesGet(URL, process_instance_id=iid, var_name="amount",
                                    binary=True)
    try:
        call(data)
    except Exception as exc:  # bpm keeps no binary variables: Camunda's 400 for them
        assert "not a binary value" in str(exc), exc
    else:
        raise AssertionError("a variable that is not binary has no data")


def external_tasks():
    instance = start("pc_ext")
    held = locked(instance)
    call(externaltask.ExtendLock(URL, id_=held.id_, new_duration=30000, worker_id="pc"))
    call(externaltask.Unlock(URL, id_=held.id_))
    held = locked(instance)
    listed = call(externaltask.GetList(URL, process_instance_id=instance.id_,
                                       request_error_details=False))
    assert [t.id_ for t in listed] == [held.id_]
    got = call(externaltask.Get(URL, id_=held.id_, request_error_details=False))
    assert got.worker_id == "pc"
    call(externaltask.HandleFailure(URL, id_=held.id_, worker_id="pc", error_message="down",
                                    error_details="trace", retries=0, retry_timeout=0))
    (failed,) = call(incident.GetList(URL, process_instance_id=instance.id_))
    assert failed.incident_message == "down"
    assert call(incident.Get(URL, id_=failed.id_)).configuration == held.id_
    call(externaltask.SetRetries(URL, id_=held.id_, retries=1))
    held = locked(instance)
    complete = externaltask.Complete(URL, id_=held.id_, worker_id="pc")
    complete.add_variable("done", True)
    call(complete)
    caught = start("pc_ext")
    held = locked(caught)
    call(externaltask.HandleBPMNError(URL, id_=held.id_, worker_id="pc", error_code="E1",
                                      error_message="nothing left"))


def external_task_count():
    instance = start("pc_ext")
    locked(instance)
    assert call(externaltask.Count(URL, process_instance_id=instance.id_)) == 1


def error_details():
    instance = start("pc_ext")
    held = locked(instance)
    call(externaltask.HandleFailure(URL, id_=held.id_, worker_id="pc", error_message="down",
                                    error_details="trace", retries=1, retry_timeout=60000))
    # the default: one more request, for errorDetails
    assert call(externaltask.Get(URL, id_=held.id_)).error_details == "trace"


def messages():
    instance = start("pc_msg")
    (result,) = call(message.CorrelateSingle(URL, message_name="pc-paid",
                                             business_key=instance.business_key,
                                             result_enabled=True))
    assert result.execution.process_instance_id == instance.id_
    other = start("pc_msg")
    call(message.CorrelateAll(URL, message_name="pc-paid", business_key=other.business_key,
                              result_enabled=True))


def user_tasks():
    instance = start("pc_sign")
    (found,) = call(task.GetList(URL, process_instance_id=instance.id_))
    assert call(task.Get(URL, id_=found.id_)).task_definition_key == "sign"
    call(task.Unclaim(URL, id_=found.id_))
    call(task.Claim(URL, id_=found.id_, user_id="ann"))
    complete = task.Complete(URL, id_=found.id_)
    complete.add_variable("signed", True)
    call(complete)


def statistics():
    instance = start("pc_ext")
    locked(instance)
    stats = call(processdef.GetProcessInstanceStats(URL, failed_jobs=True, incidents=True))
    (mine,) = [s for s in stats if s.definition.key == "pc_ext"]
    assert mine.instances >= 1 and mine.failed_jobs == 0
    nodes = call(processdef.GetActivityInstanceStats(URL, key="pc_ext", failed_jobs=True))
    assert "work" in {n.id_ for n in nodes}
    by_id = call(processdef.GetActivityInstanceStats(URL, id_=mine.id_))
    assert {n.id_ for n in by_id} == {n.id_ for n in nodes}


def filters():
    made = taskfilter.Create(URL, name="pc signing", owner=os.environ["USER_NAME"])
    made.process_definition_key = "pc_sign"
    created = call(made)
    instance = start("pc_sign")
    assert created.id_ in {f.id_ for f in call(taskfilter.GetList(URL, name="pc signing"))}
    found = call(taskfilter.Execute(URL, id_=created.id_))
    assert instance.id_ in {t.process_instance_id for t in found}
    assert call(taskfilter.ExecuteCount(URL, id_=created.id_)) == len(found)
    call(taskfilter.Update(URL, id_=created.id_, name="pc renamed", owner=os.environ["USER_NAME"]))
    assert call(taskfilter.Get(URL, id_=created.id_)).name == "pc renamed"
    call(taskfilter.Delete(URL, id_=created.id_))


def task_people():
    instance = start("pc_sign")
    (found,) = call(task.GetList(URL, process_instance_id=instance.id_))
    call(task.IdentityLinksAdd(URL, task_id=found.id_, type_="candidate", group_id="pc-clerks"))
    call(task.SetAssignee(URL, id_=found.id_, user_id="cid"))
    links = call(task.IdentityLinksGetList(URL, task_id=found.id_))
    assert {(l.user_id, l.group_id, l.type_) for l in links} >= {
        ("cid", None, "assignee"), (None, "pc-clerks", "candidate")
    }, links
    call(task.IdentityLinksDelete(URL, task_id=found.id_, type_="candidate", group_id="pc-clerks"))
    made = call(task.CommentCreate(URL, task_id=found.id_, message="looked at it"))
    assert [c.message for c in call(task.CommentGetList(URL, task_id=found.id_))] == [
        "looked at it"
    ]
    assert call(task.CommentGet(URL, task_id=found.id_, comment_id=made.id_)).id_ == made.id_


def engine_version():
    assert call(version.Get(URL))


globals()[sys.argv[1]]()
print("ok")
"""

SCENARIOS = [
    "definitions",
    "instances",
    "variable_data",
    "external_tasks",
    pytest.param(
        "external_task_count",
        marks=pytest.mark.xfail(
            strict=True,
            reason="pycamunda 0.6.1's externaltask.Count sends its request with requests.request,"
            " without the credentials set on it: a server that checks credentials answers 401",
        ),
    ),
    pytest.param(
        "error_details",
        marks=pytest.mark.xfail(
            strict=True,
            reason="pycamunda 0.6.1 requests errorDetails with requests.get, without the"
            " credentials of its request (externaltask.Get/GetList): a server that checks"
            " credentials answers 401",
        ),
    ),
    "messages",
    "user_tasks",
    "statistics",
    "filters",
    "task_people",
    "engine_version",
]


@pytest.fixture(scope="module")
def pycamunda(server: Server, tmp_path_factory: pytest.TempPathFactory) -> ScriptClient:
    python = pycamunda_client()
    return prepare(server, tmp_path_factory, python, user="pycamunda", prefix="pc", script=SCRIPT)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_pycamunda_calls(server: Server, pycamunda: ScriptClient, scenario: str) -> None:
    run(server, pycamunda, scenario)
