"""Long polls: one returns as soon as a task is created or a failed task's retry timeout
passes (well before its own timeout), and one whose client went away locks nothing."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.processes import deploy, start

FETCH = "/external-task/fetchAndLock"
TIMEOUT_MS = 20_000


def _poll(topic: str, worker: str, timeout_ms: int = TIMEOUT_MS) -> dict[str, Any]:
    return {
        "workerId": worker,
        "maxTasks": 1,
        "asyncResponseTimeout": timeout_ms,
        "topics": [{"topicName": topic, "lockDuration": 10000}],
    }


@pytest.fixture(scope="module")
def poller(server: Server) -> str:
    server.add("poller", Role.WORKER)
    for key in ("lp_new", "lp_retry", "lp_gone"):
        deploy(server.runtime, key, key.replace("_", "-"))
    return "poller"


def _in_background(server: Server, body: dict[str, Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        began = time.monotonic()
        with server.client("poller") as c:
            out["answer"] = c.post(FETCH, json=body)
        out["seconds"] = time.monotonic() - began

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_a_poll_returns_when_a_task_is_created(server: Server, poller: str) -> None:
    thread, out = _in_background(server, _poll("lp-new", "lp-1"))
    time.sleep(0.5)  # the poll is waiting
    instance = start(server.runtime, "lp_new")
    thread.join(30)
    assert out["answer"].status_code == 200
    found = out["answer"].json()
    assert [t["processInstanceId"] for t in found] == [instance]
    assert out["seconds"] < TIMEOUT_MS / 1000  # woken by the task, not by its timeout


def test_a_poll_returns_when_a_failed_task_comes_due(server: Server, poller: str) -> None:
    start(server.runtime, "lp_retry")
    with server.client("poller") as c:
        [task] = c.post(FETCH, json=_poll("lp-retry", "lp-2", 0)).json()
        failed = c.post(
            f"/external-task/{task['id']}/failure",
            json={"workerId": "lp-2", "errorMessage": "x", "retries": 2, "retryTimeout": 1500},
        )
        assert failed.status_code == 204
    thread, out = _in_background(server, _poll("lp-retry", "lp-3"))
    thread.join(30)
    [again] = out["answer"].json()
    assert again["id"] == task["id"] and again["retries"] == 2 and again["errorMessage"] == "x"
    assert out["seconds"] < TIMEOUT_MS / 1000


def test_a_poll_ends_empty_at_its_timeout(server: Server, poller: str) -> None:
    with server.client("poller") as c:
        began = time.monotonic()
        answer = c.post(FETCH, json=_poll("lp-nothing", "lp-4", 300))
    assert answer.status_code == 200 and answer.json() == []
    assert time.monotonic() - began >= 0.3


def test_a_timeout_beyond_thirty_minutes_is_400(server: Server, poller: str) -> None:
    with server.client("poller") as c:
        answer = c.post(FETCH, json=_poll("lp-nothing", "lp-5", 1_800_001))
    assert answer.status_code == 400
    assert "asyncResponseTimeout" in answer.json()["message"]


def test_a_disconnected_poll_locks_nothing(server: Server, poller: str) -> None:
    parts = urlsplit(server.base)
    body = json.dumps(_poll("lp-gone", "lp-gone-worker", 15_000)).encode()
    creds = base64.b64encode(f"poller:{server.secrets['poller']}".encode()).decode()
    request = (
        f"POST {parts.path}{FETCH} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Authorization: Basic {creds}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        sock.sendall(request)
        time.sleep(0.5)  # the poll is waiting
    instance = start(server.runtime, "lp_gone")
    time.sleep(1.0)  # a poll still holding its place would have locked it by now
    with server.client("operator") as c:
        [task] = c.get("/external-task", params={"processInstanceId": instance}).json()
        assert task["workerId"] is None
        taken = c.post(FETCH, json=_poll("lp-gone", "next", 0)).json()
    assert [t["id"] for t in taken] == [task["id"]]
