"""The unmodified official Camunda external-task clients, JS (npm) and Python (PyPI), as bpm
workers over HTTP Basic: each completes, fails with retries (then completes), fails until an
incident, and throws a BPMN error that the error boundary catches."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpm.states import Role
from tests.server.clients import js_client, py_client
from tests.server.conftest import Server
from tests.server.processes import deploy, ended_at, message_bpmn, start

JS_WORKER = """
import { Client, Variables, BasicAuthInterceptor } from "camunda-external-task-client-js";
const client = new Client({
  baseUrl: process.env.BASE, workerId: "js-1", asyncResponseTimeout: 5000, lockDuration: 10000,
  interceptors: new BasicAuthInterceptor({ username: process.env.USER_NAME,
                                           password: process.env.PASSWORD }),
});
client.subscribe(process.env.TOPIC, async ({ task, taskService }) => {
  const mode = task.variables.get("mode");
  if (mode === "complete") {
    await taskService.extendLock(task, 20000);
    const out = new Variables().setAll({ seenBy: "js", obj: { a: [1, 2] }, when: new Date(0) });
    await taskService.complete(task, out);
  } else if (mode === "retry") {
    if (task.retries === null) {
      await taskService.handleFailure(task, { errorMessage: "boom", errorDetails: "d",
                                              retries: 1, retryTimeout: 100 });
    } else {
      await taskService.complete(task, new Variables().set("retriedWith", task.retries));
    }
  } else if (mode === "failout") {
    await taskService.handleFailure(task, { errorMessage: "out", errorDetails: "d",
                                            retries: 0, retryTimeout: 0 });
  } else if (mode === "bpmn") {
    await taskService.handleBpmnError(task, "E1", "business", new Variables().set("why", "js"));
  }
});
"""

PY_WORKER = """
import os
from camunda.external_task.external_task_worker import ExternalTaskWorker

def handle(task):
    mode = task.get_variable("mode")
    if mode == "complete":
        return task.complete({"seenBy": "py", "obj": {"value": '{"a": [1, 2]}', "type": "Json"},
                              "n": 7})
    if mode == "retry":
        if task._context.get("retries") is None:
            return task.failure("boom", "details", 1, 100)
        return task.complete({"retriedWith": task._context.get("retries")})
    if mode == "failout":
        return task.failure("out", "details", 1, 0)
    return task.bpmn_error("E1", "business", {"why": "py"})

cfg = {"maxTasks": 1, "lockDuration": 10000, "asyncResponseTimeout": 5000, "retries": 3,
       "retryTimeout": 100, "sleepSeconds": 1,
       "auth_basic": {"username": os.environ["USER_NAME"], "password": os.environ["PASSWORD"]}}
ExternalTaskWorker(worker_id="py-1", base_url=os.environ["BASE"], config=cfg).subscribe(
    [os.environ["TOPIC"]], handle)
"""


def _worker(
    cmd: list[str], cwd: Path, server: Server, topic: str, log: Path
) -> subprocess.Popen[bytes]:
    name = f"worker-{topic}"
    server.add(name, Role.WORKER, (topic,))
    env = {
        "BASE": server.base,
        "TOPIC": topic,
        "USER_NAME": name,
        "PASSWORD": server.secrets[name],
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    with log.open("wb") as out:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def js_worker(server: Server, tmp_path: Path) -> Iterator[Path]:
    folder = js_client()
    script = folder / "bpm_worker.mjs"
    script.write_text(JS_WORKER)
    log = tmp_path / "js.log"
    deploy(server.runtime, "js_flow", "js-topic")
    proc = _worker(["node", str(script)], folder, server, "js-topic", log)
    yield log
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def py_worker(server: Server, tmp_path: Path) -> Iterator[Path]:
    python = py_client()
    script = tmp_path / "bpm_worker.py"
    script.write_text(PY_WORKER)
    log = tmp_path / "py.log"
    deploy(server.runtime, "py_flow", "py-topic")
    proc = _worker([str(python), str(script)], tmp_path, server, "py-topic", log)
    yield log
    proc.terminate()
    proc.wait(10)


def _run_all_modes(server: Server, key: str, log: Path) -> None:
    rt = server.runtime
    ids = {mode: start(rt, key, mode=mode) for mode in ("complete", "retry", "failout", "bpmn")}
    expected = {
        "complete": ("COMPLETED", {"done"}),
        "retry": ("COMPLETED", {"done"}),
        "failout": ("RUNNING", set()),
        "bpmn": ("COMPLETED", {"caught"}),
    }
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rt.run_until_idle(timeout=0)
        now = {mode: ended_at(rt, iid) for mode, iid in ids.items()}
        failed = rt.engine.show(ids["failout"])["incidents"]
        if all(now[m] == expected[m] for m in ("complete", "retry", "bpmn")) and failed:
            break
        time.sleep(0.2)
    else:
        pytest.fail(
            f"not every instance ended as expected: {now}\n{log.read_text()}"
            f"\n{server.log_text()[-3000:]}"
        )
    shown = {mode: rt.engine.show(iid) for mode, iid in ids.items()}
    assert shown["complete"]["variables"]["obj"] == {"a": [1, 2]}
    assert shown["retry"]["variables"]["retriedWith"] == 1
    assert shown["bpmn"]["variables"]["why"] in ("js", "py")
    incident = shown["failout"]["incidents"][0]
    assert "out" in str(incident)


def test_the_js_client_runs_every_path(server: Server, js_worker: Path) -> None:
    _run_all_modes(server, "js_flow", js_worker)


def test_the_python_client_runs_every_path(server: Server, py_worker: Path) -> None:
    _run_all_modes(server, "py_flow", py_worker)


ENGINE_CALLS = """
import os
from camunda.client.engine_client import EngineClient

cfg = {"auth_basic": {"username": os.environ["USER_NAME"], "password": os.environ["PASSWORD"]}}
client = EngineClient(os.environ["BASE"], config=cfg)
started = client.start_process("oc_msg", {"amount": 5}, business_key="oc-1")
assert "variables" not in started, started
assert [i["id"] for i in client.get_process_instance("oc_msg")] == [started["id"]]
assert isinstance(client.get_jobs(0, 10, process_instance_id=started["id"]), list)
try:
    client.get_process_instance_variable(started["id"], "amount")
except Exception as exc:  # it reads /data too: only a binary variable has data, as in Camunda
    assert "not a binary value" in str(exc), exc
else:
    raise AssertionError("a variable that is not binary has no data")
(result,) = client.correlate_message("oc-paid", business_key="oc-1")
assert result["execution"]["processInstanceId"] == started["id"] and "variables" not in result
print("ok")
"""


def test_the_python_clients_engine_client_calls(server: Server, tmp_path: Path) -> None:
    """Its ``EngineClient`` (not used by the worker): start, list, jobs, a variable's data,
    correlation."""
    python = py_client()
    server.runtime.engine.deploy_bpmn(message_bpmn("oc_msg", "oc-paid"))
    server.add("py-engine", Role.OPERATOR)
    script = tmp_path / "engine_calls.py"
    script.write_text(ENGINE_CALLS)
    env = {
        "BASE": server.base,
        "USER_NAME": "py-engine",
        "PASSWORD": server.secrets["py-engine"],
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    done = subprocess.run(
        [str(python), str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{server.log_text()[-2000:]}"
