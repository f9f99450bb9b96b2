"""Checks every test can run over an instance: runtime rows agree with their history.

Each guarded update bumps ``version`` by one and appends one history
row in the same transaction, and rows start at version 0 with a creation event. So for every
token and task, its events chain ``from_state -> to_state`` without a gap, the last one ends
in the row's current state, at the row's ``updated_at`` (the change and its history row were
written by one transaction, with one ``now``), and there are exactly ``version + 1`` of them.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import select

from bpm.store import Database, history
from bpm.store.rows import EventRow
from bpm.store.schema import metadata
from tests.helpers import db as rows

INSTANCE_EVENTS = {
    "InstanceStarted",
    "InstanceResumed",
    "InstanceCompleted",
    "InstanceFailed",
    "InstanceTerminated",
    "InstanceCancelled",
}


def _check_chain(
    what: str,
    current_state: str,
    version: int,
    updated_at: datetime,
    events: list[dict[str, Any]],
    created: str,
    first_state: str,
) -> list[str]:
    problems: list[str] = []
    if not events:
        return [f"{what}: no history at all"]
    first = events[0]
    if first["type"] != created or first["from_state"] is not None:
        problems.append(
            f"{what}: first event is {first['type']} from {first['from_state']}, not {created}"
        )
    if first["to_state"] != first_state:
        problems.append(f"{what}: created as {first['to_state']}, expected {first_state}")
    for before, after in itertools.pairwise(events):
        if after["from_state"] != before["to_state"]:
            problems.append(
                f"{what}: event {after['type']} (id {after['id']}) starts from "
                f"{after['from_state']} but the previous one ended in "
                f"{before['to_state']}"
            )
    if events[-1]["to_state"] != current_state:
        problems.append(
            f"{what}: is {current_state} but its last event "
            f"{events[-1]['type']} ends in {events[-1]['to_state']}"
        )
    if events[-1]["at"] != updated_at:
        # The change and its history row share the transaction's ``now``.
        problems.append(
            f"{what}: updated at {updated_at} but its last event is at {events[-1]['at']}"
        )
    if len(events) != version + 1:
        problems.append(
            f"{what}: version {version} but {len(events)} events "
            f"(expected version + 1: {[e['type'] for e in events]})"
        )
    return problems


def history_problems(db: Database, iid: UUID) -> list[str]:
    """Everything about this instance whose runtime rows and history disagree."""
    problems: list[str] = []
    token_events: dict[UUID, list[dict[str, Any]]] = defaultdict(list)
    for event in rows.token_events_of(db, iid):
        token_events[event["token_id"]].append(event)
    for tok in rows.tokens_of(db, iid):
        events = token_events.pop(tok.id, [])
        what = f"token {tok.id} at {tok.node_id!r}"
        # A saga's anchor is born waiting for its compensations; every other token is ACTIVE.
        born = "WAITING" if tok.mode == "COMPENSATION" and tok.record_id is None else "ACTIVE"
        problems += _check_chain(
            what, tok.state, tok.version, tok.updated_at, events, "CREATED", born
        )
        if events and events[-1]["node_id"] != tok.node_id:
            problems.append(f"{what}: last event is at node {events[-1]['node_id']!r}")
    problems += [f"events for unknown token {t}" for t in token_events]

    task_events: dict[UUID, list[dict[str, Any]]] = defaultdict(list)
    for event in rows.task_events_of(db, iid):
        task_events[event["task_id"]].append(event)
    for task in rows.tasks_of(db, iid):
        events = task_events.pop(task.id, [])
        what = f"task {task.id} at {task.node_id!r}"
        problems += _check_chain(
            what, task.state, task.version, task.updated_at, events, "CREATED", "READY"
        )
    problems += [f"events for unknown task {t}" for t in task_events]

    inst = rows.instance(db, iid)
    inst_events = [e for e in rows.engine_events_of(db, iid) if e["type"] in INSTANCE_EVENTS]
    problems += _check_chain(
        f"instance {iid}",
        inst.state,
        inst.version,
        inst.updated_at,
        inst_events,
        "InstanceStarted",
        "RUNNING",
    )
    return problems


def trace_problems(db: Database, iid: UUID) -> list[str]:
    """Where the merged trace puts an effect before its cause.

    Checked: a task is created right after its token started waiting at the task's node; a
    task's completion comes right before its token leaves the node; tokens consumed by a join
    are marked JOINED before ``JoinFired``; the instance's start and end frame the trace.
    """
    with db.transaction() as conn:
        trace = history.of_instance(conn, iid)
    problems: list[str] = []
    last_of_token: dict[UUID | None, EventRow] = {}
    completed_task_of_token: dict[UUID | None, EventRow] = {}
    joined: set[UUID | None] = set()
    for event in trace:
        where = f"{event.table} {event.type} at {event.node_id!r} (id {event.id})"
        if event.table == "task" and event.type == "CREATED":
            before = last_of_token.get(event.token_id)
            if before is None or (before.type, before.node_id) != ("WAITING", event.node_id):
                problems.append(
                    f"{where} does not follow its token's WAITING there "
                    f"(follows {before.type if before else None})"
                )
        if event.table == "task" and event.type == "COMPLETED":
            completed_task_of_token[event.token_id] = event
        if event.table == "token":
            done = completed_task_of_token.pop(event.token_id, None)
            # FAILED: leaving can fail after the task completed (an output mapping, a
            # multi-instance completion condition), with an incident an operator retries
            if done is not None and event.type not in (
                "MOVED",
                "COMPLETED",
                "FORKED",
                "COMPENSATED",
                "FAILED",
                "CALLED",  # a call activity's mapping handler ran: the call starts
                "CANCELLED",  # the last process end listener a cancel runs: the end
            ):
                problems.append(
                    f"task {done.node_id!r} completed, then its token did "
                    f"{event.type} (id {event.id})"
                )
            if event.type == "JOINED":
                joined.add(event.token_id)
            last_of_token[event.token_id] = event
        if event.table == "engine" and event.type == "JoinFired" and event.data:
            missing = [t for t in event.data.get("consumed", []) if UUID(t) not in joined]
            if missing:
                problems.append(f"{where} comes before JOINED of {missing}")
    if trace and trace[0].type != "InstanceStarted":
        problems.append(f"the trace starts with {trace[0].table} {trace[0].type}")
    ends = [e for e in trace if e.type in ("InstanceCompleted", "InstanceCancelled")]
    if ends and trace[-1] is not ends[-1]:
        problems.append(
            f"{ends[-1].type} (id {ends[-1].id}) is followed by "
            f"{trace[-1].table} {trace[-1].type} (id {trace[-1].id})"
        )
    return problems


def replay_problems(db: Database, iid: UUID) -> list[str]:
    """What replaying the history alone gets wrong about the runtime rows."""
    from bpm.dispatch import DroppingDispatcher
    from bpm.engine.engine import Engine
    from bpm.engine.operations import replay

    return replay.check(Engine(db, DroppingDispatcher()).core, iid)


def assert_history_consistent(db: Database, iid: UUID) -> None:
    problems = history_problems(db, iid) + trace_problems(db, iid) + replay_problems(db, iid)
    assert not problems, "history disagrees with the runtime rows:\n  " + "\n  ".join(problems)


def assert_finished_cleanly(db: Database, iid: UUID, state: str = "COMPLETED") -> None:
    """The instance ended in ``state``, no token is left live, history agrees."""
    assert rows.state(db, iid) == state, rows.instance(db, iid)
    live = rows.live_tokens(db, iid)
    assert not live, f"tokens left live: {[(t.node_id, t.state) for t in live]}"
    open_tasks = [t for t in rows.tasks_of(db, iid) if t.state in ("READY", "LOCKED")]
    assert not open_tasks, f"tasks left open: {[(t.node_id, t.state) for t in open_tasks]}"
    assert_history_consistent(db, iid)


def snapshot(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every bpm table, to show that a refused call changed nothing."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with db.transaction() as conn:
        for table in metadata.sorted_tables:
            out[table.name] = sorted((tuple(r) for r in conn.execute(select(table))), key=repr)
    return out
