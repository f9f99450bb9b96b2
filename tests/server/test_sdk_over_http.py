"""``bpm.sdk.Worker(url=..., auth=...)``: the project's own worker over the HTTP API of a
real ``bpm serve``, with no database credentials, behaving as it does over the database:
long polls, the node's retry policy, BPMN errors, lock extension and a graceful stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

import bpm
from bpm.engine.operations.external import TopicRequest
from bpm.errors import NotAuthenticated
from bpm.sdk import ExternalTask, Worker
from bpm.sdk.http import HttpTransport
from bpm.states import Role
from tests.server.conftest import Server
from tests.server.processes import start

TOPIC = "sdk-http"
KEY = "sdk_http"

BPMN = f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d_sdk" targetNamespace="http://x">
  <bpmn:error id="E1" errorCode="E1"/>
  <bpmn:process id="{KEY}" isExecutable="true" camunda:historyTimeToLive="P1D">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="{TOPIC}">
      <bpmn:extensionElements>
        <camunda:failedJobRetryTimeCycle>R3/PT0.2S</camunda:failedJobRetryTimeCycle>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="done"/>
    <bpmn:endEvent id="done"/>
    <bpmn:boundaryEvent id="on_error" attachedToRef="work">
      <bpmn:errorEventDefinition errorRef="E1"/>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="on_error" targetRef="caught"/>
    <bpmn:endEvent id="caught"/>
  </bpmn:process>
</bpmn:definitions>"""


@pytest.fixture(scope="module")
def deployed(server: Server) -> Server:
    server.add("sdk-worker", Role.WORKER, topics=(TOPIC,))
    server.runtime.engine.deploy_bpmn(BPMN)
    return server


def _handler(seen: list[tuple[str, int, int]]) -> Any:
    def work(task: ExternalTask) -> dict[str, Any]:
        outcome = task.variables["outcome"]
        seen.append((outcome, task.attempt, task.retries))
        if outcome == "error":
            raise bpm.BpmnError("E1", "declined", {"why": "card"})
        if outcome == "flaky" and task.attempt == 1:
            raise RuntimeError("flaky downstream")
        if outcome == "broken":
            raise RuntimeError("always down")
        if outcome == "slow":
            time.sleep(2.5)  # longer than the 1 s lock: the worker extends it
        return {"result": outcome, "nested": {"n": [1, 2]}}

    return work


@pytest.fixture
def worker(deployed: Server) -> Iterator[tuple[Worker, list[tuple[str, int, int]]]]:
    w = Worker("sdk-http-1", url=deployed.base, auth=deployed.auth("sdk-worker"), threads=4)
    seen: list[tuple[str, int, int]] = []
    w.subscribe(TOPIC, lock_duration=timedelta(seconds=1))(_handler(seen))
    thread = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    thread.start()
    yield w, seen
    w.stop()
    thread.join(40)
    assert not thread.is_alive()


def _wait_ended(server: Server, iid: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = server.runtime.engine.show(iid)
        if shown["state"] in ("COMPLETED", "FAILED"):
            return shown
        time.sleep(0.1)
    raise AssertionError(f"instance {iid} did not end: {server.runtime.engine.show(iid)}")


def _end(shown: dict[str, Any]) -> set[str]:
    return {t["node_id"] for t in shown["tokens"] if t["node_id"] in ("done", "caught")}


def test_a_worker_over_http_runs_every_path_with_the_nodes_retry_policy(
    deployed: Server, worker: tuple[Worker, list[tuple[str, int, int]]]
) -> None:
    _, seen = worker
    rt = deployed.runtime
    ids = {o: start(rt, KEY, outcome=o) for o in ("complete", "flaky", "error", "broken")}
    ok = _wait_ended(deployed, ids["complete"])
    assert ok["state"] == "COMPLETED" and _end(ok) == {"done"}
    assert ok["variables"]["result"] == "complete"
    assert ok["variables"]["nested"] == {"n": [1, 2]}  # a Json value, back as the same value
    flaky = _wait_ended(deployed, ids["flaky"])
    assert flaky["state"] == "COMPLETED" and _end(flaky) == {"done"}
    error = _wait_ended(deployed, ids["error"])
    assert error["state"] == "COMPLETED" and _end(error) == {"caught"}
    assert error["variables"]["why"] == "card"
    broken = _wait_ended(deployed, ids["broken"])
    assert broken["state"] == "FAILED"
    [incident] = broken["incidents"]
    assert "always down" in incident["message"]
    # R3: three runs, the retries left counting down as over the database
    assert [a for o, a, _ in seen if o == "broken"] == [1, 2, 3]
    assert [r for o, _, r in seen if o == "broken"] == [2, 1, 0]


def test_a_long_handler_keeps_its_lock_and_a_stop_lets_it_finish(
    deployed: Server, worker: tuple[Worker, list[tuple[str, int, int]]]
) -> None:
    w, seen = worker
    iid = start(deployed.runtime, KEY, outcome="slow")
    deadline = time.monotonic() + 10
    while not any(o == "slow" for o, _, _ in seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    w.stop()  # while the handler sleeps: it finishes within the grace period, and reports
    shown = _wait_ended(deployed, iid)
    assert shown["state"] == "COMPLETED" and _end(shown) == {"done"}
    assert [a for o, a, _ in seen if o == "slow"] == [1]  # the lock never ran out
    assert w.abandoned == 0


def test_a_wrong_secret_is_refused_with_a_message_naming_the_auth(deployed: Server) -> None:
    w = Worker("sdk-http-bad", url=deployed.base, auth=("sdk-worker", "wrong"))
    try:
        with pytest.raises(NotAuthenticated, match="auth="):
            w.engine.fetch_and_lock("sdk-http-bad", [TopicRequest(TOPIC, timedelta(seconds=5))])
    finally:
        assert isinstance(w.engine, HttpTransport)
        w.engine.close()
