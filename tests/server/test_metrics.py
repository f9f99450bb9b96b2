"""``GET /metrics`` on a real ``bpm serve``: Prometheus's text format, parsed with the
Prometheus client's own parser; its values move as instances start, fail and end through
the API; it wants a credential that may read; no label value is an id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bpm.definitions import ProcessBuilder
from bpm.states import Role
from tests.server.conftest import Server

FETCH = "/external-task/fetchAndLock"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module", autouse=True)
def fresh_scrapes() -> Iterator[None]:
    """The server reads its database families afresh on every scrape (set before the
    module's server starts: an autouse fixture comes first)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BPM_METRICS_CACHE_SECONDS", "0")
        yield


@pytest.fixture(scope="module")
def deployed(server: Server) -> Server:
    server.add("viewer", Role.VIEWER)
    server.add("worker", Role.WORKER)
    server.runtime.engine.deploy(_remote("m_remote", "m-topic"))
    return server


def _remote(key: str, topic: str) -> dict[str, Any]:
    return (
        ProcessBuilder(key)
        .start()
        .service_task("call", topic=topic)
        .end()
        .sequence("start", "call", "end")
        .build()
    )


def _metrics_url(server: Server) -> str:
    return server.base.removesuffix("/engine-rest") + "/metrics"


def scrape(server: Server, who: str = "viewer") -> Samples:
    answer = httpx.get(_metrics_url(server), auth=server.auth(who), timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    found: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _start(op: httpx.Client) -> str:
    """Start an instance through the API (so this server counts it); its business key is
    its id's stand-in for a fetch."""
    key = uuid4().hex
    answer = op.post("/process-definition/key/m_remote/start", json={"businessKey": key})
    assert answer.status_code == 200, answer.text
    return key


def _lock(op: httpx.Client, business_key: str) -> str:
    topic = {"topicName": "m-topic", "lockDuration": 60000, "businessKey": business_key}
    body = {"workerId": "w", "maxTasks": 1, "topics": [topic]}
    [task] = op.post(FETCH, json=body).json()
    return str(task["id"])


def _instance(op: httpx.Client, business_key: str) -> str:
    [found] = op.get("/process-instance", params={"businessKey": business_key}).json()
    return str(found["id"])


def test_values_move_as_instances_start_fail_and_end(deployed: Server) -> None:
    server = deployed
    before = scrape(server)
    with server.client("operator") as op:
        done, broken, stopped = _start(op), _start(op), _start(op)
        waiting = scrape(server)
        assert value(waiting, "bpm_live_instances", process_key="m_remote", state="RUNNING") == 3
        assert value(waiting, "bpm_external_tasks", topic="m-topic", state="READY") == 3
        started = "bpm_instances_started_total"
        assert (
            value(waiting, started, process_key="m_remote")
            - value(before, started, process_key="m_remote")
            == 3
        )

        task = _lock(op, done)
        assert value(scrape(server), "bpm_external_tasks", topic="m-topic", state="LOCKED") == 1
        assert op.post(f"/external-task/{task}/complete", json={"workerId": "w"}).is_success
        task = _lock(op, broken)
        failure = {"workerId": "w", "errorMessage": "down", "retries": 0, "retryTimeout": 0}
        assert op.post(f"/external-task/{task}/failure", json=failure).is_success
        assert op.delete(f"/process-instance/{_instance(op, stopped)}").is_success

    after = scrape(server)
    ended = "bpm_instances_ended_total"
    for state in ("COMPLETED", "FAILED", "CANCELLED"):
        assert value(after, ended, process_key="m_remote", state=state) == 1, state
    assert value(after, "bpm_live_instances", process_key="m_remote", state="RUNNING") == 0
    assert value(after, "bpm_live_instances", process_key="m_remote", state="FAILED") == 1
    assert value(after, "bpm_open_incidents", process_key="m_remote", activity="call") == 1
    lifetimes = "bpm_instance_duration_seconds_count"
    assert value(after, lifetimes, process_key="m_remote") == 2  # completed and cancelled
    steps = "bpm_step_duration_seconds_count"
    assert value(after, steps, node_type="startEvent") >= 3
    assert value(after, "bpm_runnable", queue="bpm.tokens") == 0
    assert value(after, "bpm_timers_late", late_seconds="0") == 0
    # The API's own requests, by route template (never the path with its ids).
    complete = "/external-task/{task_id}/complete"
    requests = "bpm_api_requests_total"
    assert value(after, requests, method="POST", route=complete, status="204") == 1


def test_no_label_value_is_an_id(deployed: Server) -> None:
    server = deployed
    with server.client("operator") as op:
        _start(op)
        op.get(f"/process-instance/{uuid4()}")  # a 404 with an id in its path
    for name, labels in scrape(server):
        for label, text in labels:
            for part in text.replace("{", "/").replace("}", "/").split("/"):
                try:
                    UUID(part)
                except ValueError:
                    continue
                raise AssertionError(f"{name} label {label}={text!r} holds an id")


def test_a_scrape_needs_a_credential_that_may_read(deployed: Server) -> None:
    server = deployed
    url = _metrics_url(server)
    assert httpx.get(url, timeout=30).status_code == 401
    assert httpx.get(url, auth=("viewer", "wrong"), timeout=30).status_code == 401
    assert httpx.get(url, auth=server.auth("worker"), timeout=30).status_code == 403
    bearer = {"Authorization": f"Bearer viewer.{server.secrets['viewer']}"}
    assert httpx.get(url, headers=bearer, timeout=30).status_code == 200
    assert scrape(server, "operator")
