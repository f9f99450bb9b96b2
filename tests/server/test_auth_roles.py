"""What a credential may do, checked where it could slip: a long poll outliving its credential,
answers that carry variables, locks taken by another credential, wrong secrets, and refusals
that would name what the caller may not see."""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import httpx
import pytest

from bpm import credentials
from bpm.states import Role
from tests.server.conftest import Server
from tests.server.processes import deploy, message_bpmn, start

FETCH = "/external-task/fetchAndLock"


def _fetch(topic: str, worker: str, timeout_ms: int = 0, max_tasks: int = 1) -> dict[str, Any]:
    return {
        "workerId": worker,
        "maxTasks": max_tasks,
        "asyncResponseTimeout": timeout_ms,
        "topics": [{"topicName": topic, "lockDuration": 30_000}],
    }


@pytest.fixture(scope="module")
def roles(server: Server) -> Server:
    """Processes with an external task each (topics ar-poll, ar-lock, ar-start), one
    waiting for a message in two processes; a credential of every role and limit."""
    for key in ("ar_poll", "ar_poll_removed", "ar_lock", "ar_start", "ar_secret"):
        deploy(server.runtime, key, key.replace("_", "-"))
    server.runtime.engine.deploy_bpmn(message_bpmn("ar_msg_mine", "ar-paid"))
    server.runtime.engine.deploy_bpmn(message_bpmn("ar_msg_other", "ar-paid"))
    server.add("ar-worker", Role.WORKER)
    server.add("ar-worker-2", Role.WORKER)
    server.add("ar-starter", Role.STARTER, processes=("ar_start", "ar_msg_mine"))
    server.add("ar-viewer", Role.VIEWER)
    return server


def _in_background(server: Server, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Post ``body`` as ``name`` in a thread; the answer lands in the dict, "thread" joins."""
    out: dict[str, Any] = {}

    def run() -> None:
        with server.client(name) as c:
            out["answer"] = c.post(FETCH, json=body)

    out["thread"] = thread = threading.Thread(target=run)
    thread.start()
    return out


def _task(server: Server, instance_id: str) -> dict[str, Any]:
    with server.client("operator") as c:
        (found,) = c.get("/external-task", params={"processInstanceId": instance_id}).json()
    return dict(found)


# --- a long poll ends when its credential does -----------------------------------------------


def test_a_poll_opened_before_its_credential_was_removed_locks_nothing(roles: Server) -> None:
    roles.add("ar-leaving", Role.WORKER)
    out = _in_background(roles, "ar-leaving", _fetch("ar-poll-removed", "gone", 25_000))
    time.sleep(0.5)  # the poll is waiting
    credentials.remove(roles.db, "ar-leaving")
    time.sleep(1.5)  # longer than the tests' credential TTL
    instance = start(roles.runtime, "ar_poll_removed", secret="s3cr3t")
    out["thread"].join(40)
    answer = out["answer"]
    assert answer.status_code == 401, answer.text
    assert "s3cr3t" not in answer.text
    assert _task(roles, instance)["workerId"] is None


def test_a_waiting_poll_ends_when_its_credential_is_removed(roles: Server) -> None:
    """No task comes: the poll wakes by itself to check its caller, long before its timeout."""
    roles.add("ar-leaving-2", Role.WORKER)
    out = _in_background(roles, "ar-leaving-2", _fetch("ar-nothing", "gone", 30_000))
    time.sleep(0.5)
    credentials.remove(roles.db, "ar-leaving-2")
    out["thread"].join(40)
    assert out["answer"].status_code == 401, out["answer"].text


def test_a_poll_of_a_kept_credential_still_gets_its_task(roles: Server) -> None:
    out = _in_background(roles, "ar-worker", _fetch("ar-poll", "stays", 25_000))
    time.sleep(2.5)  # waits through two credential checks
    instance = start(roles.runtime, "ar_poll")
    out["thread"].join(40)
    answer = out["answer"]
    assert answer.status_code == 200, answer.text
    assert [t["processInstanceId"] for t in answer.json()] == [instance]


# --- wrong secrets ----------------------------------------------------------------------------


def test_wrong_secrets_and_odd_credentials_are_401_and_the_right_one_still_works(
    roles: Server,
) -> None:
    basic = "Basic " + base64.b64encode(b"ar-worker:bad\x01secret").decode()
    nul_name = "Basic " + base64.b64encode(b"ar-\x00worker:x").decode()
    body = {**_fetch("ar-secret", "w"), "maxTasks": 0}
    with httpx.Client(base_url=roles.base, timeout=40) as c:
        for header in (basic, nul_name):
            got = c.post(FETCH, json=body, headers={"Authorization": header})
            assert got.status_code == 401, (header, got.text)
            assert got.json()["type"] == "AuthenticationException"
        for _ in range(3):  # the same wrong secret again: refused from the cache of failures
            got = c.post(FETCH, json=body, auth=("ar-worker", "wrong"))
            assert got.status_code == 401
        unknown = c.post(FETCH, json=body, auth=("ar-nobody", "wrong"))
        assert unknown.status_code == 401
        assert unknown.json()["message"] == got.json()["message"].replace("ar-worker", "ar-nobody")
        assert c.post(FETCH, json=body, auth=roles.auth("ar-worker")).status_code == 200
