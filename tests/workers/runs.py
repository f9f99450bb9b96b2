"""What the runs of a cluster's workers left behind, read back for the continuation tests:
which Celery message wrote which history rows (their ``cause``), which process ran which
handler, what each worker took from the broker and what is still queued."""

from __future__ import annotations

import json
import re
from collections import Counter

from bpm.states import TaskEvent, TaskState, TokenEvent
from bpm.store import history
from bpm_workers.config import QUEUES
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers.cluster import Cluster

#: The jobs that carry an instance on from a queued message.
CARRY_ON = ("bpm.run_handler", "bpm.advance_token")
#: Celery's line for each message a worker takes (scans excepted: quiet_scans drops theirs).
RECEIVED = re.compile(r"Task (bpm\.\w+)\[[^\]]+\] received")


def received(cluster: Cluster, *workers: str) -> Counter[str]:
    """The messages these workers took, by task name (scans are not logged)."""
    counts: Counter[str] = Counter()
    for name in workers:
        counts.update(RECEIVED.findall((cluster.logs / f"{name}.log").read_text()))
    return counts


def causes(cluster: Cluster, business_key: str) -> list[str]:
    """The job of every history row of the instance, in write order."""
    with cluster.db.transaction() as conn:
        trace = history.of_instance(conn, cluster.instance_id(business_key))
    return [str(e.cause) for e in trace]


def runs(cluster: Cluster, business_key: str) -> list[str]:
    """The jobs that worked on the instance, each once, in the order they first wrote."""
    return list(dict.fromkeys(causes(cluster, business_key)))


def pending(cluster: Cluster) -> int:
    """Messages of this cluster waiting in its queues or held by a worker."""
    r = cluster.redis
    queued = sum(int(r.llen(f"{cluster.prefix}{q}")) for q in QUEUES)
    held = 0
    for raw in r.hvals("unacked"):
        _message, _exchange, routing_key = json.loads(raw)
        held += routing_key.startswith(cluster.prefix)
    return queued + held


def handler_runs(cluster: Cluster, business_key: str) -> dict[str, list[tuple[int, int]]]:
    """Every handler call of the instance: node -> [(attempt, pid)] in call order."""
    with cluster.db.transaction() as conn:
        found = conn.exec_driver_sql(
            "SELECT node, attempt, pid FROM test_calls WHERE business_key = %(bk)s ORDER BY seq",
            {"bk": business_key},
        ).all()
    out: dict[str, list[tuple[int, int]]] = {}
    for node, attempt, pid in found:
        out.setdefault(str(node), []).append((int(attempt), int(pid)))
    return out


def pids_by_run(cluster: Cluster, business_key: str) -> dict[str, set[int]]:
    """The worker processes that ran the handlers of the tasks each job completed."""
    iid = cluster.instance_id(business_key)
    done = rows.task_events_of(cluster.db, iid, type=TaskEvent.COMPLETED)
    with cluster.db.transaction() as conn:
        found = conn.exec_driver_sql(
            "SELECT idempotency_key, pid FROM test_calls WHERE business_key = %(bk)s",
            {"bk": business_key},
        ).all()
    # The key is the task's id; a handler that ran twice keeps its last process.
    pid_of = {str(key): int(pid) for key, pid in found}
    out: dict[str, set[int]] = {}
    for e in done:
        out.setdefault(str(e["cause"]), set()).add(pid_of[str(e["task_id"])])
    return out


def completed_by_run(cluster: Cluster, business_key: str) -> Counter[str]:
    """How many tasks each job (message) completed."""
    iid = cluster.instance_id(business_key)
    done = rows.task_events_of(cluster.db, iid, type=TaskEvent.COMPLETED)
    return Counter(str(e["cause"]) for e in done)


def assert_each_step_once(cluster: Cluster, business_key: str, nodes: list[str]) -> None:
    """Each handler ran once with one key, and ``assert_tasks_once``."""
    for node in nodes:
        assert cluster.calls(business_key, node) == (1, 1), (business_key, node)
    assert_tasks_once(cluster, business_key, nodes)


def assert_tasks_once(cluster: Cluster, business_key: str, nodes: list[str]) -> None:
    """One task per node, completed once; the token started waiting at each node once; the
    instance ended cleanly."""
    tasks = cluster.task_rows(business_key)
    assert Counter(t.node_id for t in tasks) == Counter(nodes), tasks
    assert {t.state for t in tasks} == {TaskState.DONE}, tasks
    iid = cluster.instance_id(business_key)
    done = rows.task_events_of(cluster.db, iid, type=TaskEvent.COMPLETED)
    assert Counter(e["node_id"] for e in done) == Counter(nodes), done
    waited = rows.token_events_of(cluster.db, iid, type=TokenEvent.WAITING)
    assert Counter(e["node_id"] for e in waited if e["node_id"] in nodes) == Counter(nodes)
    assert_finished_cleanly(cluster.db, iid)
