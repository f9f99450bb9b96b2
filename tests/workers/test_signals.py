"""A signal broadcast through real worker processes: thrown by ``bpm.throw_signal`` (sent
twice with one message id: thrown once), delivered to 2,000 waiting instances in batches of
50 while the worker delivering them is SIGKILLed halfway, with the batch job sent three
times more: every instance receives the signal exactly once, the signal start event starts
one instance, and that instance does not receive the signal that started it."""

from __future__ import annotations

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher, JobName
from bpm.engine.engine import Engine
from bpm.engine.jobs.table import run_job
from tests.helpers.runtime import FAR_FUTURE
from tests.workers.cluster import Cluster

N = 2000
CATCHER = (
    ProcessBuilder("catcher")
    .start()
    .signal_event("wait", signal="flood")
    .end()
    .sequence("start", "wait", "end")
    .build()
)
STARTED = (
    ProcessBuilder("started")
    .signal_start(signal="flood")
    .signal_event("again", signal="flood")
    .end()
    .sequence("start", "again", "end")
    .build()
)


def _waiting(cluster: Cluster) -> None:
    """N instances waiting at the catch, made in this process (no worker is needed)."""
    queue = InProcessDispatcher()
    engine = Engine(cluster.db, queue)
    engine.deploy(CATCHER)
    engine.deploy(STARTED)
    for i in range(N):
        engine.start("catcher", business_key=f"c-{i}")
    while (job := queue.pop(FAR_FUTURE)) is not None:
        run_job(engine, job)


def _count(cluster: Cluster, sql: str) -> int:
    with cluster.db.transaction() as conn:
        return int(conn.exec_driver_sql(sql).scalar_one())


def _rows(cluster: Cluster, sql: str) -> list[tuple[object, ...]]:
    with cluster.db.transaction() as conn:
        return [tuple(r) for r in conn.exec_driver_sql(sql).all()]


def test_a_broadcast_reaches_every_subscription_once_through_a_killed_worker(
    cluster: Cluster,
) -> None:
    _waiting(cluster)
    small = {"BPM_SIGNAL_BATCH": "50"}
    cluster.worker("w1", extra_env=small)
    cluster.wait_ready()
    client = cluster.client()
    for _ in range(2):  # one request delivered twice: one throw
        client.send_task(
            JobName.THROW_SIGNAL,
            queue=f"{cluster.prefix}bpm.starts",
            task_id="throw-1",
            kwargs={"name": "flood", "variables": {"colour": "red"}},
        )
    cluster.wait_until(
        lambda: _count(cluster, "SELECT count(*) FROM signals") == 1, 30, "the throw"
    )
    [(signal_id,)] = _rows(cluster, "SELECT id FROM signals")
    for _ in range(3):  # the batch job, sent again and again
        client.send_task(
            JobName.DELIVER_SIGNAL,
            queue=f"{cluster.prefix}bpm.tokens",
            kwargs={"signal_id": str(signal_id)},
        )
    cluster.wait_until(
        lambda: _count(cluster, "SELECT count(*) FROM signal_deliveries") < (N + 1) // 2,
        120,
        "half the deliveries",
    )
    cluster.kill("w1")
    left = _count(cluster, "SELECT count(*) FROM signal_deliveries")
    assert 0 < left < N, "the worker was killed halfway"
    cluster.worker("w2", extra_env=small)  # a starting worker runs the scans once
    cluster.beat("beat")
    cluster.wait_until(
        lambda: (
            _count(
                cluster,
                "SELECT count(*) FROM process_instances WHERE process_key = 'catcher' "
                "AND state = 'COMPLETED'",
            )
            == N
        ),
        240,
        "every catcher to complete",
    )
    received = _rows(
        cluster,
        "SELECT instance_id, count(*) FROM engine_events WHERE type = 'SignalReceived' "
        "GROUP BY instance_id",
    )
    counts = {str(iid): int(str(n)) for iid, n in received}
    assert len(counts) == N + 1 and set(counts.values()) == {1}  # the catchers and the start
    assert _count(cluster, "SELECT count(*) FROM signal_deliveries") == 0
    assert _count(cluster, "SELECT count(*) FROM signals WHERE finished_at IS NULL") == 0
    assert _count(cluster, "SELECT count(*) FROM variables WHERE name = 'colour'") == N + 1
    started = _rows(cluster, "SELECT state FROM process_instances WHERE process_key = 'started'")
    assert started == [("RUNNING",)]  # its own signal did not reach it
