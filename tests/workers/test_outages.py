"""Real workers whose database goes away: no start is lost, none is doubled, no finished
handler result is dropped.

The workers reach PostgreSQL through a TCP proxy that the test cuts, which shows them what a
database restart or a cut network does (every connection drops, new ones are turned away),
while the handlers write their side effects straight to the database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from tests.helpers.tcp_proxy import TcpProxy
from tests.workers.cluster import Cluster
from tests.workers.test_runtime import deploy


@pytest.fixture
def proxy(cluster: Cluster) -> Iterator[TcpProxy]:
    """Every worker of ``cluster`` reaches the database through this proxy."""
    direct = cluster.env["BPM_DATABASE_URL"]
    with TcpProxy.to_database(direct) as p:
        cluster.env["BPM_DATABASE_URL"] = p.url_for(direct)
        cluster.env["BPM_TEST_CALLS_URL"] = direct
        yield p


def two_steps() -> dict[str, Any]:
    return (
        ProcessBuilder("two_steps")
        .start()
        .service_task("a", handler="noop")
        .service_task("b", handler="noop")
        .end()
        .sequence("start", "a", "b", "end")
        .build()
    )


def long_lock_slow() -> dict[str, Any]:
    """A slow handler whose lock (60 s) outlasts the test: a dropped result would only be
    run again once it expired."""
    return (
        ProcessBuilder("long_lock_slow")
        .start()
        .service_task(
            "slow", handler="slow", timeout="PT60S", retry={"max_attempts": 3, "backoff": "PT0S"}
        )
        .service_task("after", handler="noop")
        .end()
        .sequence("start", "slow", "after", "end")
        .build()
    )


def test_starts_sent_while_the_database_is_unreachable_all_start_once(
    cluster: Cluster, proxy: TcpProxy
) -> None:
    deploy(cluster, two_steps())
    cluster.env["BPM_OUTAGE_WAIT"] = "1"  # give up waiting quickly: the message goes back
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_ready()
    proxy.cut()
    for i in range(20):
        cluster.start("two_steps", {}, f"down-{i}")
    time.sleep(4)  # every start job tries, waits, and puts its message back, more than once
    assert cluster.states() == {}
    proxy.restore()
    states = cluster.wait_all(20, timeout=60)
    assert sorted(states) == sorted(f"down-{i}" for i in range(20))
    assert cluster.instance_count() == 20
    for i in range(20):
        assert cluster.calls(f"down-{i}", "a") == (1, 1)
        assert cluster.calls(f"down-{i}", "b") == (1, 1)
    logs = "".join((cluster.logs / f"{w}.log").read_text() for w in ("w1", "w2"))
    assert "job=bpm.start_instance outcome=requeued" in logs
    assert "outcome=failed" not in logs.split("job=bpm.start_instance")[-1].split("\n")[0]


def test_a_start_that_waits_out_a_short_outage_runs_in_the_same_job(
    cluster: Cluster, proxy: TcpProxy
) -> None:
    deploy(cluster, two_steps())
    cluster.worker("w1")
    cluster.wait_ready()
    proxy.cut()
    for i in range(5):
        cluster.start("two_steps", {}, f"short-{i}")
    time.sleep(3)
    proxy.restore()
    cluster.wait_all(5, timeout=60)
    log = (cluster.logs / "w1.log").read_text()
    assert "the database answered again" in log
    assert "outcome=requeued" not in log


def test_a_handler_result_finished_during_an_outage_is_kept(
    cluster: Cluster, proxy: TcpProxy
) -> None:
    deploy(cluster, long_lock_slow())
    cluster.worker("w1")
    cluster.wait_ready()
    cluster.start("long_lock_slow", {"slow_seconds": 2}, "kept")
    cluster.wait_until(lambda: cluster.calls("kept", "slow")[0] == 1, 30, "the slow handler")
    proxy.cut()  # the handler finishes while the database is unreachable
    time.sleep(4)
    proxy.restore()
    # Well inside the 60 s lock: the result was written, not dropped and run again.
    cluster.wait_all(1, timeout=30)
    assert cluster.calls("kept", "slow") == (1, 1)
    assert cluster.calls("kept", "after") == (1, 1)
    assert "recording the result of task" in (cluster.logs / "w1.log").read_text()


def test_a_start_sent_again_by_business_key_never_starts_a_second_instance(
    cluster: Cluster,
) -> None:
    deploy(cluster, two_steps())
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_ready()
    for i in range(30):
        cluster.start("two_steps", {}, f"again-{i}")
    cluster.redis.flushdb()  # some starts may be lost with the broker: the sender resends all
    for i in range(30):
        cluster.start("two_steps", {}, f"again-{i}")  # a new message, a new task id
    cluster.wait_all(30, timeout=60)
    time.sleep(1)  # a doubled start would show up by now
    assert cluster.instance_count() == 30
    for i in range(30):
        assert cluster.calls(f"again-{i}", "a") == (1, 1)


def test_a_worker_with_queues_that_miss_the_prefix_says_so(cluster: Cluster) -> None:
    cluster.worker("wrong", queues="bpm.tokens,bpm.handlers,bpm.compensation,bpm.starts,bpm.scans")
    cluster.worker("right")
    cluster.wait_ready()
    wrong = (cluster.logs / "wrong.log").read_text()
    assert "THIS WORKER CONSUMES NONE OF BPM'S QUEUES" in wrong
    assert f"{cluster.prefix}bpm.starts" in wrong
    assert "CONSUMES NONE" not in (cluster.logs / "right.log").read_text()
