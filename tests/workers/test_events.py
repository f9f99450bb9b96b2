"""BPMN events through real worker and beat processes: an event-based gateway raced by its
message and its timer lets exactly one win; message boundary events on a user task, sent by
another service by task name; an escalation from called instances to their call activity."""

from __future__ import annotations

import time
from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import handlers
from tests.workers.cluster import Cluster

assert callable(handlers.noop)

RACES = 20
DUE = 3.0  # seconds from start to the gateway's timer


def racing() -> dict[str, Any]:
    b = ProcessBuilder("racing").start()
    b._node("gw", "eventBasedGateway")
    b._node("paid", "messageEvent", message="paid")
    b._node("late", "timerEvent", duration=f"PT{int(DUE)}S")
    b.service_task("on_paid", handler="noop").end("end_paid")
    b.service_task("on_late", handler="noop").end("end_late")
    b.sequence("start", "gw", "paid", "on_paid", "end_paid")
    return b.sequence("gw", "late", "on_late", "end_late").build()


def test_an_event_gateway_raced_by_its_message_and_its_timer_lets_one_win(
    cluster: Cluster,
) -> None:
    Engine(cluster.db, InProcessDispatcher()).deploy(racing())
    for name in ("w1", "w2"):
        cluster.worker(name)
    cluster.beat("beat1")
    cluster.beat("beat2")
    cluster.wait_ready()
    began = time.monotonic()
    for i in range(RACES):
        cluster.start("racing", {}, f"race-{i}")
    cluster.wait_until(lambda: len(cluster.states()) == RACES, 30, "the instances to start")
    client = cluster.client()
    for i in range(RACES):  # sent around the time the timers come due, from before to after
        time.sleep(max(0.0, began + DUE - 0.5 + i * 0.12 - time.monotonic()))
        client.send_task(
            "bpm.correlate_message",
            queue=f"{cluster.prefix}bpm.starts",
            kwargs={"message": "paid", "business_key": f"race-{i}"},
        )
    cluster.wait_all(RACES, timeout=60)
    wins = {"on_paid": 0, "on_late": 0}
    for i in range(RACES):
        bk = f"race-{i}"
        ran = {node: cluster.calls(bk, node)[0] for node in wins}
        assert sum(ran.values()) == 1, (bk, ran)  # one path, run once
        for node, count in ran.items():
            wins[node] += count
        assert_finished_cleanly(cluster.db, cluster.instance_id(bk))
    assert sum(wins.values()) == RACES


def reminders() -> dict[str, Any]:
    b = ProcessBuilder("reminded").start().user_task("approve")
    b._node("remind", "boundaryEvent", attachedTo="approve", message="remind", interrupting=False)
    b._node("withdraw", "boundaryEvent", attachedTo="approve", message="withdraw")
    b.service_task("on_remind", handler="noop").end("reminded_end")
    b.service_task("on_withdraw", handler="noop").end("withdrawn_end")
    b.end()
    b.sequence("start", "approve", "end").sequence("remind", "on_remind", "reminded_end")
    return b.sequence("withdraw", "on_withdraw", "withdrawn_end").build()


def test_message_boundaries_on_a_user_task_sent_by_another_service(cluster: Cluster) -> None:
    Engine(cluster.db, InProcessDispatcher()).deploy(reminders())
    cluster.worker("w1")
    cluster.wait_ready()
    cluster.start("reminded", {}, "case-1")

    def waiting() -> bool:
        if "case-1" not in cluster.states():
            return False
        live = rows.live_tokens(cluster.db, cluster.instance_id("case-1"))
        return [t.wait_kind for t in live] == ["USER"]

    cluster.wait_until(waiting, 30, "the user task")
    client = cluster.client()
    queue = f"{cluster.prefix}bpm.starts"
    for n in range(2):  # two reminders, each a message of its own
        client.send_task(
            "bpm.correlate_message",
            queue=queue,
            task_id=f"remind-{n}",
            kwargs={"message": "remind", "business_key": "case-1"},
        )
    cluster.wait_until(lambda: cluster.calls("case-1", "on_remind")[0] == 2, 30, "reminders")
    client.send_task(
        "bpm.correlate_message",
        queue=queue,
        kwargs={"message": "withdraw", "business_key": "case-1"},
    )
    cluster.wait_all(1, timeout=30)
    iid = cluster.instance_id("case-1")
    assert_finished_cleanly(cluster.db, iid)
    assert cluster.calls("case-1", "on_withdraw") == (1, 1)
    assert cluster.calls("case-1", "on_remind") == (2, 2)
    (task,) = [t for t in cluster.task_rows("case-1") if t.node_id == "approve"]
    assert task.state == "CANCELLED"


CALLS = 10


def escalating_child() -> dict[str, Any]:
    b = ProcessBuilder("checked").start()
    b._node("too_late", "escalationThrow", escalation="LATE")
    b.service_task("check", handler="noop").end()
    return b.sequence("start", "too_late", "check", "end").build()


def escalation_caller() -> dict[str, Any]:
    b = ProcessBuilder("checking").start()
    b.call_activity("call", process="checked", business_key="${child_key}")
    b._node("late", "boundaryEvent", attachedTo="call", escalation="LATE", interrupting=False)
    b.service_task("notify", handler="noop").end("notified")
    b.service_task("after", handler="noop").end()
    b.sequence("start", "call", "after", "end")
    return b.sequence("late", "notify", "notified").build()


def test_escalations_from_called_instances_reach_their_call_activities(
    cluster: Cluster,
) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    engine.deploy(escalating_child())
    engine.deploy(escalation_caller())
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat("beat1")
    cluster.wait_ready()
    for i in range(CALLS):
        cluster.start("checking", {"child_key": f"child-{i}"}, f"parent-{i}")
    cluster.wait_all(2 * CALLS, timeout=90)
    for i in range(CALLS):
        assert cluster.calls(f"parent-{i}", "notify") == (1, 1)
        assert cluster.calls(f"parent-{i}", "after") == (1, 1)
        assert cluster.calls(f"child-{i}", "check") == (1, 1)
        assert_finished_cleanly(cluster.db, cluster.instance_id(f"parent-{i}"))
