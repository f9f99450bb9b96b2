"""A worker's in-process continuation on real Celery workers (see concepts.md, "Synchronous
continuation"): a run killed with -9 inside a handler (in a start message's run, in a queued
message's run), a run that reaches its bound in steps or in time (and a worker that dies
between the bound's last commit and the send of the rest), a run that reaches a wait, a run
that forks. In each, nothing is lost and nothing is done twice.

What shows that a run was local, without a broker hop: every history row names the job that
wrote it (its ``cause``), so the rows one Celery message wrote share one cause; and each
worker logs Celery's "Task <name>[<id>] received" line once per message it takes.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.engine.jobs.spec import JobQueue
from bpm.states import EngineEvent, TaskEvent, TaskState, TokenEvent, TokenState, WaitKind
from tests.helpers import db as rows
from tests.workers import handlers, processes
from tests.workers.cluster import Cluster
from tests.workers.runs import (
    CARRY_ON,
    assert_each_step_once,
    assert_tasks_once,
    completed_by_run,
    handler_runs,
    pending,
    pids_by_run,
    received,
    runs,
)

assert callable(handlers.gate)

#: Long enough that no run below is cut by time on a loaded machine, unless a test says so.
NO_TIME_BOUND = {"BPM_CHAIN_SECONDS": "60"}


def deploy(cluster: Cluster, *documents: dict[str, Any]) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    for doc in documents:
        engine.deploy(doc)


def test_a_run_killed_mid_handler_loses_nothing_and_repeats_only_that_handler(
    cluster: Cluster,
) -> None:
    """One start message runs s1..s6 in one worker process; the worker is killed inside s6's
    handler. The lock scan offers s6 again once its lock expires, and a second worker runs
    it (same key, attempt 2) and the rest; the start message, redelivered, finds the
    instance."""
    nodes = [f"s{i}" for i in range(1, 13)]
    deploy(cluster, processes.continued_line("line", 12, {"s6": "gate"}))
    gate = cluster.logs / "gate"
    cluster.worker("w1", extra_env=NO_TIME_BOUND)
    cluster.wait_ready()
    cluster.start("line", {"gate": str(gate)}, "line-1")
    cluster.wait_until(lambda: cluster.calls("line-1", "s6")[0] == 1, 30, "s6 to start")
    cluster.kill("w1")

    # What the dead run left: s1..s5 done, s6 locked, nothing further, all of it written by
    # the one start message, in one process.
    states = {t.node_id: t.state for t in cluster.task_rows("line-1")}
    assert states == {**{f"s{i}": TaskState.DONE for i in range(1, 6)}, "s6": TaskState.LOCKED}
    assert received(cluster, "w1") == Counter({"bpm.start_instance": 1})
    (first,) = runs(cluster, "line-1")
    assert first.startswith("bpm.start_instance")
    calls = handler_runs(cluster, "line-1")
    assert list(calls) == nodes[:6]
    (w1_pid,) = {pid for node in nodes[:6] for _attempt, pid in calls[node]}

    gate.touch()
    # The start message w1 held comes back after the visibility timeout.
    cluster.worker("w2", extra_env={**NO_TIME_BOUND, "BPM_VISIBILITY_TIMEOUT": "3"})
    cluster.beat("beat1")
    cluster.wait_all(1, timeout=60)
    cluster.wait_until(lambda: pending(cluster) == 0, 30, "the start message to come back")

    assert cluster.instance_count() == 1
    assert (
        "job=bpm.start_instance process_key=line business_key=line-1 outcome=existing"
        in (cluster.logs / "w2.log").read_text()
    )
    calls = handler_runs(cluster, "line-1")
    assert list(calls) == nodes
    assert [attempt for attempt, _pid in calls["s6"]] == [1, 2]
    assert cluster.calls("line-1", "s6") == (2, 1)  # one idempotency key
    for node in nodes[:5] + nodes[6:]:
        assert cluster.calls("line-1", node) == (1, 1), node
    assert_tasks_once(cluster, "line-1", nodes)
    # The rest was one local run too: the lock scan offered s6 once, and the message it
    # sent ran s6 to the end in one process of the second worker.
    scan, rest = runs(cluster, "line-1")[1:]
    assert scan == "bpm.scan_locks"
    assert rest.startswith("bpm.run_handler")
    (w2_pid,) = {pid for node in nodes[6:] for _attempt, pid in calls[node]}
    assert calls["s6"][1][1] == w2_pid != w1_pid


def test_a_run_from_a_queued_message_killed_mid_handler_repeats_only_that_handler(
    cluster: Cluster,
) -> None:
    """BPM_CHAIN_STEPS=3: the start message runs s1 and s2 and queues s3; the worker takes
    that message, runs s3 and is killed inside s4. The message, redelivered, finds s3 done
    (a no-op); the lock scan offers s4 again; s4 runs twice with one key, the rest once."""
    nodes = [f"s{i}" for i in range(1, 9)]
    deploy(cluster, processes.continued_line("queued", 8, {"s4": "gate"}))
    gate = cluster.logs / "gate"
    cluster.worker("w1", extra_env={**NO_TIME_BOUND, "BPM_CHAIN_STEPS": "3"})
    cluster.wait_ready()
    cluster.start("queued", {"gate": str(gate)}, "queued-1")
    cluster.wait_until(lambda: cluster.calls("queued-1", "s4")[0] == 1, 30, "s4 to start")
    cluster.kill("w1")

    tasks = {t.node_id: t for t in cluster.task_rows("queued-1")}
    assert {n: t.state for n, t in tasks.items()} == {
        **{f"s{i}": TaskState.DONE for i in range(1, 4)},
        "s4": TaskState.LOCKED,
    }
    assert received(cluster, "w1") == Counter({"bpm.start_instance": 1, "bpm.run_handler": 1})
    started, carried = runs(cluster, "queued-1")
    assert started.startswith("bpm.start_instance")
    assert carried == f"bpm.run_handler task_id={tasks['s3'].id}"
    assert completed_by_run(cluster, "queued-1") == Counter({started: 2, carried: 1})

    gate.touch()
    cluster.worker("w2", extra_env={**NO_TIME_BOUND, "BPM_VISIBILITY_TIMEOUT": "3"})
    cluster.beat("beat1")
    cluster.wait_all(1, timeout=60)
    cluster.wait_until(lambda: pending(cluster) == 0, 30, "the held message to come back")

    w2_log = (cluster.logs / "w2.log").read_text()
    assert f"job=bpm.run_handler task_id={tasks['s3'].id} outcome=stale" in w2_log
    calls = handler_runs(cluster, "queued-1")
    assert [attempt for attempt, _pid in calls["s4"]] == [1, 2]
    assert cluster.calls("queued-1", "s4") == (2, 1)  # one idempotency key
    for node in nodes[:3] + nodes[4:]:
        assert cluster.calls("queued-1", node) == (1, 1), node
    assert_tasks_once(cluster, "queued-1", nodes)
    assert runs(cluster, "queued-1")[2] == "bpm.scan_locks"


@pytest.mark.parametrize("steps", [3, 1])
def test_a_run_bounded_in_steps_queues_the_rest_and_each_task_runs_once(
    cluster: Cluster, steps: int
) -> None:
    """BPM_CHAIN_STEPS=3 (and 1, every step its own message): a 10-task instance goes on
    over several messages, none completing more than ``steps`` tasks. w1 takes only starts
    and w2 only what runs queue, so the rest of every run crosses to w2: each message runs
    in one process, and every handler still runs once."""
    count, instances = 10, 4
    nodes = [f"s{i}" for i in range(1, count + 1)]
    deploy(cluster, processes.continued_line("bound", count))
    bound = {**NO_TIME_BOUND, "BPM_CHAIN_STEPS": str(steps)}
    cluster.worker("w1", extra_env=bound, queues=f"{cluster.prefix}{JobQueue.STARTS}")
    carry_on = ",".join(f"{cluster.prefix}{q}" for q in (JobQueue.TOKENS, JobQueue.HANDLERS))
    cluster.worker("w2", extra_env=bound, queues=carry_on)
    cluster.wait_ready()
    keys = [f"bound-{i}" for i in range(instances)]
    for key in keys:
        cluster.start("bound", {}, key)
    cluster.wait_all(instances, timeout=60)
    at_least = -(-count // steps)  # messages, when each completes at most ``steps`` tasks
    starters: set[int] = set()
    carriers: set[int] = set()
    for key in keys:
        assert_each_step_once(cluster, key, nodes)
        per_run = completed_by_run(cluster, key)
        assert sum(per_run.values()) == count
        assert max(per_run.values()) <= steps, per_run
        started, *rest = runs(cluster, key)
        assert started.startswith("bpm.start_instance")
        assert len(rest) >= at_least - 1 and all(r.startswith(CARRY_ON) for r in rest), rest
        pids = pids_by_run(cluster, key)
        assert all(len(p) == 1 for p in pids.values()), pids  # one message, one process
        starters |= pids.pop(started, set())
        carriers |= set().union(*pids.values())
    # With one step a start message completes no task: it only creates the first.
    assert len(starters) == (steps > 1) and len(carriers) == 1, (starters, carriers)
    assert not starters & carriers
    w1, w2 = received(cluster, "w1"), received(cluster, "w2")
    assert w1 == Counter({"bpm.start_instance": instances}), w1
    assert sum(w2[name] for name in CARRY_ON) >= (at_least - 1) * instances, w2


def test_a_worker_dying_as_it_queues_the_rest_of_a_bounded_run_loses_nothing(
    cluster: Cluster,
) -> None:
    """BPM_CHAIN_STEPS=3: the start message's run commits s1, s2 and s3's task (unlocked),
    then its process dies before the message for s3 is sent. The start message comes back
    and finds the instance; the scans find s3 ready with no one on it and queue it; every
    handler runs once."""
    nodes = [f"s{i}" for i in range(1, 7)]
    deploy(cluster, processes.continued_line("unsent", 6))
    marker = cluster.logs / "died"
    crash = {
        **NO_TIME_BOUND,
        "BPM_CHAIN_STEPS": "3",
        "BPM_VISIBILITY_TIMEOUT": "3",
        "BPM_TEST_DIE_BEFORE_SEND": "bpm.run_handler",
        "BPM_TEST_DIE_MARKER": str(marker),
    }
    cluster.worker("w1", extra_env=crash)
    cluster.beat("beat1")
    cluster.wait_ready()
    cluster.start("unsent", {}, "unsent-1")
    cluster.wait_all(1, timeout=60)
    cluster.wait_until(lambda: pending(cluster) == 0, 30, "the start message to come back")

    assert marker.exists()
    assert cluster.instance_count() == 1
    assert_each_step_once(cluster, "unsent-1", nodes)
    # The dead run committed s1, s2 and s3's task, unlocked, for whoever takes it.
    started, *rest = runs(cluster, "unsent-1")
    assert started.startswith("bpm.start_instance")
    assert completed_by_run(cluster, "unsent-1")[started] == 2
    s3 = next(t for t in cluster.task_rows("unsent-1") if t.node_id == "s3")
    created = rows.task_events_of(cluster.db, s3.instance_id, task_id=s3.id)[0]
    assert (created["type"], created["to_state"], created["cause"]) == (
        TaskEvent.CREATED,
        TaskState.READY,
        started,
    )
    # No message for s3 ever left: the scan found the task ready and unattended.
    log = (cluster.logs / "w1.log").read_text()
    assert "outcome=existing" in log  # the start message came back, and found the instance
    assert re.search(r"job=bpm.scan_stalled .*ready_tasks=1", log), log
    assert rest[0] == f"bpm.run_handler task_id={s3.id}", rest
    assert all(r.startswith(CARRY_ON) for r in rest), rest


def test_a_run_bounded_in_time_queues_the_rest_and_each_task_runs_once(cluster: Cluster) -> None:
    """BPM_CHAIN_SECONDS=0.5 with handlers of 0.2 s: a message starts no step after the
    first one that begins past its half second, so it completes at most 4 tasks; the 8 tasks
    take at least two messages and every handler runs once."""
    count = 8
    nodes = [f"s{i}" for i in range(1, count + 1)]
    deploy(cluster, processes.continued_line("timed", count, dict.fromkeys(nodes, "slow")))
    cluster.worker("w1", extra_env={"BPM_CHAIN_SECONDS": "0.5"})
    cluster.wait_ready()
    cluster.start("timed", {"slow_seconds": 0.2}, "timed-1")
    cluster.wait_all(1, timeout=60)
    assert_each_step_once(cluster, "timed-1", nodes)
    per_run = completed_by_run(cluster, "timed-1")
    assert sum(per_run.values()) == count
    assert max(per_run.values()) <= 4, per_run
    started, *rest = runs(cluster, "timed-1")
    assert started.startswith("bpm.start_instance")
    assert len(rest) >= 1 and all(r.startswith(CARRY_ON) for r in rest), rest
    assert sum(received(cluster, "w1")[name] for name in CARRY_ON) == len(rest)


def test_a_run_stops_at_a_wait_and_the_message_resumes_it(cluster: Cluster) -> None:
    """The start message runs a1 and a2 and stops at the receive task: the token waits for
    its message, nothing of the cluster is queued or held. The correlated message resumes
    the instance in new messages; every handler runs once."""
    deploy(cluster, processes.continued_wait())
    cluster.worker("w1")
    cluster.wait_ready()
    cluster.start("waits", {}, "waits-1")

    def live() -> list[tuple[str, str, str | None]]:
        if "waits-1" not in cluster.states():
            return []
        found = rows.live_tokens(cluster.db, cluster.instance_id("waits-1"))
        return [(t.node_id, t.state, t.wait_kind) for t in found]

    at_wait = [("wait", TokenState.WAITING, WaitKind.MESSAGE)]
    cluster.wait_until(lambda: live() == at_wait, 30, "the instance to wait for its message")
    # The worker's start-up scans may still be queued; then nothing is left in flight.
    cluster.wait_until(lambda: pending(cluster) == 0, 10, "the queues to empty")
    assert live() == at_wait
    assert [t.node_id for t in cluster.task_rows("waits-1")] == ["a1", "a2"]
    assert cluster.calls("waits-1", "b1") == (0, 0)
    (started,) = runs(cluster, "waits-1")
    assert started.startswith("bpm.start_instance")
    assert received(cluster, "w1") == Counter({"bpm.start_instance": 1})

    cluster.client().send_task(
        "bpm.correlate_message",
        queue=f"{cluster.prefix}{JobQueue.STARTS}",
        kwargs={"message": "go", "business_key": "waits-1"},
    )
    cluster.wait_all(1, timeout=30)
    assert_each_step_once(cluster, "waits-1", ["a1", "a2", "b1", "b2"])
    iid = cluster.instance_id("waits-1")
    assert len(rows.engine_events_of(cluster.db, iid, type=EngineEvent.MESSAGE_CORRELATED)) == 1
    resumed = runs(cluster, "waits-1")[1:]
    assert resumed[0].startswith("bpm.correlate_message"), resumed
    assert all(r.startswith(CARRY_ON) for r in resumed[1:]), resumed
    by_run = completed_by_run(cluster, "waits-1")
    assert by_run[started] == 2 and sum(by_run[r] for r in resumed) == 2, by_run
    cluster.wait_until(lambda: pending(cluster) == 0, 10, "the queues to empty")


def test_a_fork_in_a_run_sends_the_other_branch_and_the_join_fires_once(cluster: Cluster) -> None:
    """The start message follows one branch of the fork in process and sends the other to
    the queue. w1 takes only starts and w2 only what runs queue, so the two branches run in
    two processes at once and race to the join. Each branch's handlers run once, in one
    process each, and the join fires once."""
    deploy(cluster, processes.continued_fork())
    cluster.worker("w1", extra_env=NO_TIME_BOUND, queues=f"{cluster.prefix}{JobQueue.STARTS}")
    carry_on = ",".join(f"{cluster.prefix}{q}" for q in (JobQueue.TOKENS, JobQueue.HANDLERS))
    cluster.worker("w2", extra_env=NO_TIME_BOUND, queues=carry_on)
    cluster.wait_ready()
    keys = [f"forked-{i}" for i in range(4)]
    for key in keys:
        cluster.start("forked", {}, key)
    cluster.wait_all(len(keys), timeout=60)
    for key in keys:
        assert_each_step_once(cluster, key, processes.FORKED_TASKS)
        iid = cluster.instance_id(key)
        assert len(rows.engine_events_of(cluster.db, iid, type=EngineEvent.JOIN_FIRED)) == 1
        started, *rest = runs(cluster, key)
        assert started.startswith("bpm.start_instance")
        assert len(rest) == 1 and rest[0].startswith("bpm.advance_token"), rest
        pids = pids_by_run(cluster, key)
        assert all(len(p) == 1 for p in pids.values()), pids
        calls = handler_runs(cluster, key)
        branch_pids = [{calls[f"{branch}{i}"][0][1] for i in (1, 2, 3)} for branch in "ab"]
        assert all(len(p) == 1 for p in branch_pids) and branch_pids[0] != branch_pids[1]


def test_a_worker_dying_as_it_sends_a_forked_branch_loses_neither_branch(
    cluster: Cluster,
) -> None:
    """The start message's run commits the fork, with the first branch's task created in
    it locked by this run, then its process dies before the message for the other branch is
    sent (and before it runs its own): the stalled-token scan finds the other branch's
    token and moves it on, the lock scan offers the first branch's task once its lock has
    expired. Each handler runs once, the join fires once."""
    deploy(cluster, processes.continued_fork())
    marker = cluster.logs / "died"
    crash = {
        **NO_TIME_BOUND,
        "BPM_TEST_DIE_BEFORE_SEND": "bpm.advance_token",
        "BPM_TEST_DIE_MARKER": str(marker),
    }
    cluster.worker("w1", extra_env=crash)
    cluster.beat("beat1")
    cluster.wait_ready()
    cluster.start("forked", {}, "forked-1")
    cluster.wait_all(1, timeout=60)
    assert marker.exists()
    assert cluster.instance_count() == 1
    assert_each_step_once(cluster, "forked-1", processes.FORKED_TASKS)
    iid = cluster.instance_id("forked-1")
    assert len(rows.engine_events_of(cluster.db, iid, type=EngineEvent.JOIN_FIRED)) == 1
    # The dead run's last commit was the fork: both branches' tokens were created by it.
    started, *rest = runs(cluster, "forked-1")
    assert started.startswith("bpm.start_instance")
    created = rows.token_events_of(cluster.db, iid, type=TokenEvent.CREATED)
    branches = [e for e in created if e["node_id"] != "start"]
    assert sorted((e["node_id"], e["cause"]) for e in branches) == [
        ("a1", started),
        ("b1", started),
    ]
    assert completed_by_run(cluster, "forked-1")[started] == 0
    # No message for either branch ever left: the scans found b1's token and a1's locked
    # task, one run each.
    log = (cluster.logs / "w1.log").read_text()
    assert "outcome=existing" in log  # the start message came back, and found the instance
    assert re.search(r"job=bpm.scan_stalled .*stalled_tokens=1", log), log
    assert re.search(r"job=bpm.scan_locks .*expired_locks=1", log), log
    (b1,) = [e for e in branches if e["node_id"] == "b1"]
    a1 = rows.only_task(cluster.db, iid, "a1")
    assert sorted(rest) == [
        f"bpm.advance_token token_id={b1['token_id']}",
        f"bpm.run_handler task_id={a1.id}",
        "bpm.scan_locks",  # it released the dead run's lock
    ], rest
