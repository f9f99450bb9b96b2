"""The distributed runtime with real worker and beat processes on Redis and PostgreSQL.

Messages may be lost, duplicated or delayed and workers may die: no instance may be lost and
no token transition may happen twice.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any
from uuid import uuid4

import pytest

from bpm.dispatch import InProcessDispatcher
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.store import history, incidents
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.workers import handlers, processes
from tests.workers.cluster import Cluster

assert callable(handlers.noop)  # the reference run in this process needs these handlers


def deploy(cluster: Cluster, *documents: dict[str, Any]) -> Engine:
    engine = Engine(cluster.db, InProcessDispatcher())
    for doc in documents:
        engine.deploy(doc)
    return engine


def signature(cluster: Cluster, business_key: str) -> Counter[tuple[str, str, str | None]]:
    """History without ids, times and actors: what happened, not who or when. A run in
    process takes a fork's other branches on, reserving their tasks, and the row that begins
    such a task's run (``LOCK_EXTENDED`` with its attempt) has no counterpart on Celery,
    where each branch locks its own task: it is left out."""
    with cluster.db.transaction() as conn:
        events = history.of_instance(conn, cluster.instance_id(business_key))
    return Counter(
        (e.table, e.type, e.node_id)
        for e in events
        if not (e.type == "LOCK_EXTENDED" and "attempt" in (e.data or {}))
    )


def test_branches_subprocess_and_retry_complete_on_two_workers(cluster: Cluster) -> None:
    deploy(cluster, processes.branches_and_subprocess())
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_ready()
    for i in range(10):
        cluster.start("branches", {"i": i}, f"order-{i}")
    cluster.wait_all(10, timeout=60)
    for i in range(10):
        assert_finished_cleanly(cluster.db, cluster.instance_id(f"order-{i}"))
        for node in ("a", "s1", "s2", "after"):
            assert cluster.calls(f"order-{i}", node) == (1, 1)
        assert cluster.calls(f"order-{i}", "b") == (2, 1)  # failed once, same key


def test_every_message_delivered_twice_changes_nothing(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_DATABASE_URL", cluster.env["BPM_DATABASE_URL"])  # for record()
    engine = deploy(cluster, processes.branches_and_subprocess())
    cluster.env["BPM_IMPORTS"] += ",tests.workers.duplicate_sends"
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_ready()
    for i in range(5):
        task_id = str(uuid4())
        cluster.start("branches", {"i": i}, f"dup-{i}", task_id=task_id)
        cluster.start("branches", {"i": i}, f"dup-{i}", task_id=task_id)  # redelivered
    cluster.wait_all(5, timeout=60)
    # The same process run once, with single deliveries, in this test process.
    reference = EmbeddedRuntime(db=cluster.db, migrate=False)
    started = reference.engine.start("branches", {"i": 0}, business_key="reference")
    reference.wait_for(started.id, timeout=30)
    assert cluster.states()["reference"] == "COMPLETED"
    expected = signature(cluster, "reference")
    for i in range(5):
        assert signature(cluster, f"dup-{i}") == expected
        assert_history_consistent(cluster.db, cluster.instance_id(f"dup-{i}"))
        for node in ("a", "s1", "s2", "after"):
            assert cluster.calls(f"dup-{i}", node) == (1, 1)
    assert len(cluster.states()) == 6, "a duplicated start message started a second instance"
    del engine, started


def test_worker_killed_while_its_handler_runs(cluster: Cluster) -> None:
    deploy(cluster, processes.slow_then_noop())
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat("beat1")
    cluster.wait_ready()
    cluster.start("slow", {"slow_seconds": 2.5}, "victim")
    cluster.wait_until(lambda: bool(cluster.running_pids("slow")), 30, "the slow handler to run")
    pid = cluster.running_pids("slow")[0]
    victim = next(name for name, p in cluster.procs.items() if _group(pid) == p.pid)
    cluster.kill(victim)
    cluster.wait_all(1, timeout=60)
    iid = cluster.instance_id("victim")
    assert_finished_cleanly(cluster.db, iid)
    with cluster.db.transaction() as conn:
        events = history.of_instance(conn, iid)
    moved_on = [e for e in events if e.type == "MOVED" and e.node_id == "after"]
    assert len(moved_on) == 1, "the token left the killed task more than once"
    slow = next(t for t in cluster.task_rows("victim") if t.node_id == "slow")
    assert slow.state == "DONE" and slow.attempts == 2
    assert cluster.calls("victim", "after") == (1, 1)


def test_start_held_by_a_killed_worker_comes_back_and_starts_nothing_new(cluster: Cluster) -> None:
    deploy(cluster, processes.slow_then_noop())
    short = {"BPM_VISIBILITY_TIMEOUT": "3"}
    cluster.worker("w1", extra_env=short)
    cluster.wait_ready()
    # The start job goes on with the instance, so its message is unacknowledged while the
    # slow handler runs: killing the worker leaves it in Redis's unacked set.
    cluster.start("slow", {"slow_seconds": 2.5}, "held")
    cluster.wait_until(lambda: bool(cluster.running_pids("slow")), 30, "the slow handler")
    cluster.kill("w1")
    assert cluster.held("bpm.start_instance") == 1, "the killed worker held no start"
    cluster.worker("w2", extra_env=short)
    cluster.beat("beat1")
    cluster.wait_all(1, timeout=60)
    cluster.wait_until(
        lambda: b"outcome=existing" in (cluster.logs / "w2.log").read_bytes(),
        30,
        "the held start message to be delivered again",
    )
    cluster.wait_until(
        lambda: cluster.held("bpm.start_instance") == 0,
        30,
        "the redelivered start to be acknowledged",
    )
    assert list(cluster.states()) == ["held"], "the redelivered start began a second instance"
    assert_finished_cleanly(cluster.db, cluster.instance_id("held"))


def test_broker_flushed_mid_run_loses_no_instance(cluster: Cluster) -> None:
    # A short handler timeout: the worker killed below may die inside a handler.
    engine = deploy(
        cluster,
        processes.steps("flush", 6, timeout="PT3S", retry={"max_attempts": 2, "backoff": "PT0S"}),
    )
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat("beat1")
    cluster.beat("beat2")  # two beats for the whole test: nothing may fire twice
    cluster.wait_ready()
    sender = cluster.sender()
    for i in range(200):
        sender.start("flush", {"i": i}, business_key=f"f-{i}")
    cluster.wait_until(lambda: _completed(cluster) >= 20, 60, "the run to get going")
    cluster.redis.flushdb()  # this test process's broker database only
    unfinished = 200 - _completed(cluster)
    assert unfinished > 0, "everything finished before the flush; make the run longer"
    cluster.kill("w1")  # and a worker dies; a new one takes its place
    cluster.worker("w3")
    cluster.wait_all(200, timeout=120)
    reruns = []
    for i in range(200):
        for n in range(6):
            count, keys = cluster.calls(f"f-{i}", f"n{n}")
            assert keys == 1 and count >= 1
            if count > 1:
                reruns.append((i, n))
    # Only a handler that was running in the killed worker may have run twice.
    assert len(reruns) <= 1, reruns
    for i in range(0, 200, 20):
        assert_finished_cleanly(cluster.db, cluster.instance_id(f"f-{i}"))
    del engine


def test_handler_that_kills_its_worker_ends_as_an_incident(cluster: Cluster) -> None:
    deploy(cluster, processes.suicide())
    cluster.worker("w1")
    cluster.beat("beat1")
    cluster.wait_ready()
    cluster.start("suicide", {}, "poison")
    cluster.wait_all(1, timeout=60, states=frozenset({"FAILED"}))
    time.sleep(3)  # give it the chance to (wrongly) run again
    die = next(t for t in cluster.task_rows("poison") if t.node_id == "die")
    assert die.state == "FAILED" and die.attempts == 2
    assert cluster.calls("poison", "die") == (2, 1)
    with cluster.db.transaction() as conn:
        opened = incidents.of_instance(conn, cluster.instance_id("poison"), only_open=True)
    assert len(opened) == 1 and "never reported back" in opened[0].message


def _completed(cluster: Cluster) -> int:
    return sum(1 for s in cluster.states().values() if s == "COMPLETED")


def _group(pid: int) -> int:
    import os

    return os.getpgid(pid)


def test_cli_start_wait_completes_through_workers_and_beat(cluster: Cluster) -> None:
    """The README's distributed run: migrate (done), deploy, 2 workers, beat, bpm start --wait."""
    import json
    import subprocess

    from bpm.demo import ORDER_FULFILMENT
    from tests.cli.conftest import bpm_executable

    cluster.env["BPM_IMPORTS"] = "bpm.demo.order_handlers"
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat("beat1")
    cluster.wait_ready()
    env = dict(cluster.env)
    run = [*bpm_executable()]
    deployed = subprocess.run(
        [*run, "deploy", str(ORDER_FULFILMENT), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(deployed.stdout)["version"] == 1
    started = subprocess.run(
        [
            *run,
            "start",
            "order_fulfilment",
            "--var",
            "total=180",
            "--var",
            'items=["lamp"]',
            "--var",
            "payment_glitch=true",
            "--business-key",
            "cli-1",
            "--wait",
            "60",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert started.returncode == 0, started.stderr + cluster.tail()
    assert json.loads(started.stdout)["state"] == "COMPLETED"


def test_flower_asks_for_its_login_and_then_shows_the_workers(cluster: Cluster) -> None:
    import base64
    import json
    import secrets
    import socket
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    login = f"ops:{secrets.token_urlsafe(16)}"
    cluster.worker("w1")
    cluster.wait_ready()
    cluster.flower(port, login)

    def get(path: str, credentials: str | None, method: str = "GET") -> tuple[int, bytes]:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
        if credentials is not None:
            token = base64.b64encode(credentials.encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as refused:
            return refused.code, b""

    def listening() -> bool:
        try:
            get("/", None)
        except OSError:
            return False
        return True

    cluster.wait_until(listening, 40, "Flower to listen")
    wrong = login.partition(":")[0] + ":not-the-password"
    shutdown = f"/api/worker/shutdown/w1@{cluster.prefix}"
    for path, method in (("/", "GET"), ("/api/workers", "GET"), (shutdown, "POST")):
        assert get(path, None, method)[0] == 401, path
        assert get(path, wrong, method)[0] == 401, path
    assert get("/", login)[0] == 200

    def workers() -> dict[str, Any]:
        status, body = get("/api/workers?refresh=1", login)
        return dict(json.loads(body)) if status == 200 else {}

    cluster.wait_until(
        lambda: any(name.startswith("w1@") for name in workers()), 40, "Flower to list the worker"
    )


def test_poisoned_messages_are_dropped_and_the_workers_go_on(cluster: Cluster) -> None:
    deploy(cluster, processes.steps("after_poison", 2))
    cluster.worker("w1")
    cluster.wait_ready()
    client, p = cluster.client(), cluster.prefix
    garbage: list[tuple[str, str, list[Any], dict[str, Any]]] = [
        ("bpm.advance_token", "bpm.tokens", ["not-a-uuid", "x"], {}),
        ("bpm.advance_token", "bpm.tokens", [], {"token_id": str(uuid4()), "expected_version": 0}),
        ("bpm.advance_token", "bpm.tokens", [], {"token_id": str(uuid4())}),
        ("bpm.run_handler", "bpm.handlers", [], {"task_id": str(uuid4()), "extra": 1}),
        ("bpm.run_handler", "bpm.handlers", [[1, 2]], {}),
        ("bpm.start_instance", "bpm.starts", [], {"process_key": "no_such_process"}),
        (
            "bpm.start_instance",
            "bpm.starts",
            [],
            {"process_key": "after_poison", "variables": "not an object"},
        ),
        ("bpm.start_instance", "bpm.starts", [], {}),
    ]
    for name, queue, args, kwargs in garbage:
        client.send_task(name, args=args, kwargs=kwargs, queue=f"{p}{queue}")
    cluster.start("after_poison", {}, "healthy")
    cluster.wait_all(1, timeout=30)
    assert cluster.procs["w1"].poll() is None, "a poisoned message killed the worker"
    log = (cluster.logs / "w1.log").read_text()
    assert log.count("outcome=dropped") + log.count("outcome=refused") >= 6, log[-3000:]
    assert len(cluster.states()) == 1
