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
from tests.server.ops_processes import (  # noqa: F401 (a fixture)
    review_bpmn,
    review_task,
    server_imports_the_handlers,
)
from tests.server.processes import deploy, message_bpmn, start

FETCH = "/external-task/fetchAndLock"
#: How long a poll sent in the background gets to reach its wait before the test changes its
#: credential. A request still on its way is authorised and fetches as any request in flight
#: does; only a waiting poll is what these tests are about. Generous: a loaded 2-core machine
#: took over half a second to get a poll that far.
POLL_SETTLES = 2.0


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
    for key in ("ar_poll", "ar_poll_removed", "ar_poll_gone", "ar_lock", "ar_start", "ar_secret"):
        deploy(server.runtime, key, key.replace("_", "-"))
    server.runtime.engine.deploy_bpmn(message_bpmn("ar_msg_mine", "ar-paid"))
    server.runtime.engine.deploy_bpmn(message_bpmn("ar_msg_other", "ar-paid"))
    server.runtime.engine.deploy_bpmn(review_bpmn("ar_review"))
    server.add("ar-worker", Role.WORKER)
    server.add("ar-worker-2", Role.WORKER)
    server.add("ar-starter", Role.STARTER, processes=("ar_start", "ar_msg_mine"))
    server.add("ar-task-starter", Role.STARTER)
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
    time.sleep(POLL_SETTLES)  # the poll is waiting
    credentials.remove(roles.db, "ar-leaving")
    time.sleep(1.5)  # longer than the tests' credential TTL
    instance = start(roles.runtime, "ar_poll_removed", secret="s3cr3t")
    out["thread"].join(40)
    answer = out["answer"]
    assert answer.status_code == 401, answer.text
    assert "s3cr3t" not in answer.text
    assert _task(roles, instance)["workerId"] is None


def test_a_task_made_just_after_the_removal_is_not_locked_for_the_removed_caller(
    roles: Server,
) -> None:
    """Within the TTL, while the verified credential is still cached: the fetch a new task
    wakes reads the credential's row first."""
    roles.add("ar-leaving-now", Role.WORKER)
    out = _in_background(roles, "ar-leaving-now", _fetch("ar-poll-gone", "gone", 25_000))
    time.sleep(POLL_SETTLES)  # the poll is waiting
    credentials.remove(roles.db, "ar-leaving-now")
    instance = start(roles.runtime, "ar_poll_gone", secret="s3cr3t")
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


# --- variables in answers are a read ----------------------------------------------------------


def _start_body(business_key: str, **extra: Any) -> dict[str, Any]:
    return {"businessKey": business_key, "withVariablesInReturn": True, **extra}


def test_a_replayed_start_answers_variables_only_to_a_reader(roles: Server) -> None:
    """Someone else's instance, running or cancelled: a starter re-sending its start key gets
    the instance, not its variables."""
    running = start(roles.runtime, "ar_start", "ar-bk-running", secret="hidden")
    cancelled = start(roles.runtime, "ar_start", "ar-bk-cancelled", secret="hidden")
    roles.runtime.engine.cancel(cancelled)
    url = "/process-definition/key/ar_start/start"
    with roles.client("ar-starter") as c:
        for key, instance in (("ar-bk-running", running), ("ar-bk-cancelled", cancelled)):
            again = c.post(url, json=_start_body(key))
            assert again.status_code == 200, again.text
            assert again.json()["id"] == instance
            assert "variables" not in again.json() and "hidden" not in again.text
        by_header = c.post(
            url,
            json={"withVariablesInReturn": True, "variables": {"mine": {"value": 1}}},
            headers={"Idempotency-Key": "ar-idem"},
        )
        replayed = c.post(
            url, json={"withVariablesInReturn": True}, headers={"Idempotency-Key": "ar-idem"}
        )
    # A new instance's variables go to its starter; the same start sent again does not.
    assert by_header.json()["variables"]["mine"]["value"] == 1
    assert replayed.json()["id"] == by_header.json()["id"]
    assert "variables" not in replayed.json()
    with roles.client("operator") as c:
        shown = c.post(url, json=_start_body("ar-bk-running")).json()
    assert shown["variables"]["secret"]["value"] == "hidden"


def test_variables_in_a_correlation_result_need_a_reader(roles: Server) -> None:
    instance = str(
        roles.runtime.engine.start("ar_msg_mine", {"secret": "hidden"}, business_key="ar-m1").id
    )
    roles.runtime.run_until_idle(timeout=5)
    body = {
        "messageName": "ar-paid",
        "businessKey": "ar-m1",
        "resultEnabled": True,
        "variablesInResultEnabled": True,
    }
    with roles.client("ar-starter") as c:
        refused = c.post("/message", json=body)
        assert refused.status_code == 403, refused.text
        assert "variablesInResultEnabled" in refused.json()["message"]
        assert roles.runtime.engine.show(instance)["state"] == "RUNNING"  # nothing moved
        done = c.post("/message", json={**body, "variablesInResultEnabled": False})
    assert done.status_code == 200, done.text
    assert "variables" not in done.json()[0] and "hidden" not in done.text


def test_variables_returned_by_a_task_completion_need_a_reader(roles: Server) -> None:
    instance = start(roles.runtime, "ar_review", orderId="A1", secret="hidden")
    task = review_task(roles.runtime, instance)
    values = {"approved": {"value": True}, "amount": {"value": 3}}
    body = {"variables": values, "withVariablesInReturn": True}
    with roles.client("ar-task-starter") as c:
        refused = c.post(f"/task/{task}/complete", json=body)
        assert refused.status_code == 403, refused.text
        assert "withVariablesInReturn" in refused.json()["message"]
        assert review_task(roles.runtime, instance) == task  # still open
        done = c.post(f"/task/{task}/complete", json={**body, "withVariablesInReturn": False})
    assert done.status_code == 204, done.text


# --- refusals name nothing the caller may not see ---------------------------------------------


def test_another_process_s_instance_neither_blocks_nor_shows_in_a_correlation(
    roles: Server,
) -> None:
    engine = roles.runtime.engine
    other = str(engine.start("ar_msg_other", {}, business_key="ar-shared").id)
    mine = str(engine.start("ar_msg_mine", {}, business_key="ar-shared").id)
    alone = str(engine.start("ar_msg_other", {}, business_key="ar-not-mine").id)
    roles.runtime.run_until_idle(timeout=5)
    with roles.client("ar-starter") as c:
        done = c.post("/message", json={"messageName": "ar-paid", "businessKey": "ar-shared"})
        assert done.status_code == 204, done.text
        nothing = c.post("/message", json={"messageName": "ar-paid", "businessKey": "ar-not-mine"})
        by_id = c.post("/message", json={"messageName": "ar-paid", "processInstanceId": alone})
    roles.runtime.run_until_idle(timeout=5)
    assert engine.show(mine)["state"] == "COMPLETED"
    assert engine.show(other)["state"] == "RUNNING"
    assert engine.show(alone)["state"] == "RUNNING"
    # As if they did not exist: the same 400 as for a business key nobody uses.
    assert nothing.status_code == 400 and by_id.status_code == 400
    for answer in (nothing, by_id):
        assert "ar_msg_other" not in answer.text
    assert other not in nothing.text


def test_a_refused_report_does_not_name_the_task_s_topic(roles: Server) -> None:
    roles.add("ar-only-x", Role.WORKER, ("ar-x",))
    instance = start(roles.runtime, "ar_secret")
    with roles.client("operator") as c:
        (task,) = c.post(FETCH, json=_fetch("ar-secret", "op")).json()
    with roles.client("ar-only-x") as c:
        refused = c.post(f"/external-task/{task['id']}/complete", json={"workerId": "op"})
    assert refused.status_code == 403
    assert "ar-secret" not in refused.json()["message"]
    assert task["id"] in refused.json()["message"]
    assert _task(roles, instance)["workerId"] == "op"


# --- a lock belongs to the credential that took it --------------------------------------------


def test_only_the_credential_that_took_a_lock_may_act_on_it(roles: Server) -> None:
    """Even with the right workerId; an operator may act on any lock."""
    instance = start(roles.runtime, "ar_lock")
    with roles.client("ar-worker") as c:
        (task,) = c.post(FETCH, json=_fetch("ar-lock", "shared-id")).json()
    url = f"/external-task/{task['id']}"
    with roles.client("ar-worker-2") as c:
        for path, body in (
            ("extendLock", {"workerId": "shared-id", "newDuration": 60_000}),
            ("complete", {"workerId": "shared-id"}),
            ("failure", {"workerId": "shared-id", "retries": 0, "errorMessage": "x"}),
            ("bpmnError", {"workerId": "shared-id", "errorCode": "E1"}),
            ("lock", {"workerId": "shared-id", "lockDuration": 60_000}),
            ("unlock", None),
        ):
            refused = c.post(f"{url}/{path}", json=body)
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json()["type"] == "AuthorizationException"
            # Neither the holder's credential nor its worker is named.
            assert "ar-worker" not in refused.json()["message"].replace("ar-worker-2", "")
    after = _task(roles, instance)
    assert after["workerId"] == "shared-id" and after["errorMessage"] is None
    assert after["lockExpirationTime"] == task["lockExpirationTime"]
    with roles.client("operator") as c:
        extended = c.post(
            f"{url}/extendLock", json={"workerId": "shared-id", "newDuration": 60_000}
        )
        assert extended.status_code == 204, extended.text
    with roles.client("ar-worker") as c:
        done = c.post(f"{url}/complete", json={"workerId": "shared-id"})
        assert done.status_code == 204, done.text
    roles.runtime.run_until_idle(timeout=5)
    assert roles.runtime.engine.show(instance)["state"] == "COMPLETED"


def test_a_lock_taken_by_id_belongs_to_its_credential_too(roles: Server) -> None:
    instance = start(roles.runtime, "ar_lock")
    task_id = _task(roles, instance)["id"]
    url = f"/external-task/{task_id}"
    with roles.client("ar-worker") as c:
        taken = c.post(f"{url}/lock", json={"workerId": "by-id", "lockDuration": 60_000})
        assert taken.status_code == 204, taken.text
    with roles.client("ar-worker-2") as c:
        assert c.post(f"{url}/complete", json={"workerId": "by-id"}).status_code == 403
    with roles.client("ar-worker") as c:
        assert c.post(f"{url}/unlock").status_code == 204
    assert _task(roles, instance)["workerId"] is None


def test_a_refused_start_by_definition_id_names_only_the_id_it_was_given(roles: Server) -> None:
    with roles.client("operator") as c:
        hidden = c.get("/process-definition/key/ar_secret").json()["id"]
    with roles.client("ar-starter") as c:
        refused = c.post(f"/process-definition/{hidden}/start", json={})
    assert refused.status_code == 403, refused.text
    assert hidden in refused.json()["message"]
    assert "ar_secret" not in refused.text


def test_a_huge_user_name_is_not_echoed_in_its_401(roles: Server) -> None:
    with roles.client() as c:
        refused = c.get("/process-definition", auth=("n" * 10_000, "wrong"))
    assert refused.status_code == 401
    assert len(refused.text) < 500, refused.text[:200]
