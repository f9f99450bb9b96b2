"""A real Celery worker's metrics port: with ``BPM_WORKER_METRICS_PORT`` the main process
adds up what its prefork children counted (Prometheus multiprocess mode), for a caller with
a credential that may read; its values follow the instances the worker runs."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from uuid import UUID, uuid4

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.states import Role
from tests.workers import processes
from tests.workers.cluster import Cluster

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(url: str, auth: tuple[str, str]) -> Samples:
    answer = httpx.get(url, auth=auth, timeout=30)
    assert answer.status_code == 200, answer.text
    found: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _sum(samples: Samples, name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def test_a_worker_exports_its_jobs_and_the_engines_families(
    cluster: Cluster, tmp_path: Path
) -> None:
    secret = credentials.add(cluster.db, "scraper", Role.VIEWER, SYSTEM_CLOCK.now())
    credentials.add(cluster.db, "robot", Role.WORKER, SYSTEM_CLOCK.now())
    engine = Engine(cluster.db, InProcessDispatcher())
    engine.deploy(processes.steps("m_steps", 2))
    engine.deploy(
        ProcessBuilder("m_boom")
        .start()
        .service_task("bad", handler="boom", retry={"max_attempts": 1})
        .end()
        .sequence("start", "bad", "end")
        .build()
    )
    port = _free_port()
    cluster.worker(
        "w1",
        extra_env={
            "BPM_WORKER_METRICS_PORT": str(port),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom"),
        },
    )
    cluster.wait_ready()
    url = f"http://127.0.0.1:{port}/metrics"
    for i in range(3):
        cluster.start("m_steps", {"i": i}, f"ok-{i}", task_id=str(uuid4()))
    cluster.start("m_boom", {}, "bad-0", task_id=str(uuid4()))
    ends = frozenset({"COMPLETED", "FAILED"})
    states = cluster.wait_all(4, timeout=60, states=ends)
    assert sorted(states.values()) == ["COMPLETED"] * 3 + ["FAILED"]

    assert httpx.get(url, timeout=30).status_code == 401  # credentials exist: none is no one
    assert httpx.get(url, auth=("scraper", "wrong"), timeout=30).status_code == 401
    assert httpx.get(url, auth=("robot", "x"), timeout=30).status_code == 401
    samples: Samples = {}
    deadline = time.monotonic() + 30  # the last job's counts land after its commit
    while time.monotonic() < deadline:
        samples = _scrape(url, ("scraper", secret))
        if _value(samples, "bpm_instances_ended_total", process_key="m_boom", state="FAILED"):
            break
        time.sleep(0.2)
    assert _value(samples, "bpm_instances_started_total", process_key="m_steps") == 3
    assert _value(samples, "bpm_instances_started_total", process_key="m_boom") == 1
    ended = "bpm_instances_ended_total"
    assert _value(samples, ended, process_key="m_steps", state="COMPLETED") == 3
    assert _value(samples, ended, process_key="m_boom", state="FAILED") == 1
    assert _value(samples, "bpm_instance_duration_seconds_count", process_key="m_steps") == 3
    handlers = "bpm_handler_duration_seconds_count"
    assert _value(samples, handlers, handler="noop", outcome="ok") == 6
    assert _value(samples, handlers, handler="boom", outcome="failed") == 1
    assert _sum(samples, "bpm_step_duration_seconds_count") >= 4
    jobs = "bpm_worker_jobs_total"
    assert _sum(samples, jobs, job="bpm.start_instance") == 4
    assert _sum(samples, "bpm_worker_job_duration_seconds_count", job="bpm.start_instance") == 4
    for name, labels in samples:
        for label, text in labels:
            try:
                UUID(text)
            except ValueError:
                continue
            raise AssertionError(f"{name} label {label}={text!r} is an id")
