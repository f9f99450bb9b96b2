"""External tasks: fetch-and-lock (the reports are in ``external_reports``).

The calls Camunda 7's external-task API offers, as Python calls over the database (the
transport for trusted services; an HTTP transport can sit on top). Each call is one
transaction that checks the task's state, its lock owner and the lock's expiry first; a wrong
worker, an expired lock, or an unknown or finished task gets its own error and changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Tx
from bpm.engine.operations.external_reports import unlock
from bpm.engine.semantics import scopes, task_moves
from bpm.errors import (
    TaskLockError,
)
from bpm.limits import NAME_MAX, check_text
from bpm.store import task_fetch, tasks, variables
from bpm.store.notify import Listener, listen
from bpm.store.rows import TaskRow
from bpm.store.schema import HISTORY_BLOCK
from bpm.store.task_filters import ANY_INSTANCE, InstanceMatch

log = logging.getLogger("bpm.engine")

MAX_TASKS = 1000
MAX_LONG_POLL = 300.0
assert MAX_TASKS <= HISTORY_BLOCK, "one fetch's history rows must fit one id block"


@dataclass(frozen=True)
class TopicRequest:
    """One topic to fetch from, how long to lock its tasks, and which variables to send."""

    topic: str
    lock_duration: timedelta
    variables: Sequence[str] | None = None
    #: Only tasks whose instance is this (business key, process key, variables...).
    match: InstanceMatch = ANY_INSTANCE
    #: Only the variables of the scope the task runs in (``scopes.local_view``).
    local_only: bool = False


@dataclass(frozen=True)
class LockedTask:
    """What a worker needs to do the work and report back."""

    id: UUID
    topic: str
    worker_id: str
    lock_expire_at: datetime
    instance_id: UUID
    business_key: str | None
    process_key: str
    process_version: int
    node_id: str
    attempt: int
    retries: int
    priority: int
    variables: dict[str, Any]
    #: How long to wait before the next attempt if this one fails: the node's retry policy.
    backoff: timedelta = timedelta(0)
    created_at: datetime | None = None
    token_id: UUID | None = None
    definition_id: UUID | None = None
    #: The last failure reported on the task (None: none yet).
    error_message: str | None = None
    error_details: str | None = None
    #: The node's extension properties (``camunda:property``), name -> text.
    properties: Mapping[str, str] | None = None


def fetch_and_lock(
    core: EngineCore,
    worker_id: str,
    topics: Sequence[TopicRequest],
    max_tasks: int = 10,
    long_poll: float = 0.0,
    listener: Listener | None = None,
    credential: str | None = None,
) -> list[LockedTask]:
    """Lock up to ``max_tasks`` tasks; with ``long_poll`` seconds, wait for one to appear
    (on ``listener`` if given: it must already listen, for these topics at least).
    ``credential``: an opaque name the locks are held for besides ``worker_id`` (the HTTP
    server's caller); only the same name may then report on them (``external_reports``)."""
    _check_fetch(worker_id, topics, max_tasks, long_poll)
    deadline = time.monotonic() + long_poll
    found = _fetch_once(core, worker_id, topics, max_tasks, credential)
    if found or long_poll <= 0:
        return found
    poll = (worker_id, topics, max_tasks, deadline)
    if listener is not None:  # it listened before that look: nothing can have been missed
        return _long_poll(core, *poll, listener, False, credential)
    # Nothing yet: listen first, then look again, so a task created in between is not missed.
    with listen(core.db, {t.topic for t in topics}) as own:
        return _long_poll(core, *poll, own, True, credential)


def _long_poll(
    core: EngineCore,
    worker_id: str,
    topics: Sequence[TopicRequest],
    max_tasks: int,
    deadline: float,
    listener: Listener,
    look: bool,
    credential: str | None,
) -> list[LockedTask]:
    """(Look, then) sleep until a task is offered (NOTIFY) or a failed one's retry_at comes
    due (no one is told of that), and look again, until ``deadline``."""
    while True:
        found = _fetch_once(core, worker_id, topics, max_tasks, credential) if look else []
        look = True
        left = deadline - time.monotonic()
        if found or left <= 0:
            return found
        with core.db.transaction() as conn:
            due = tasks.next_retry_at(conn, [t.topic for t in topics], core.clock.now())
        if due is not None:
            left = min(left, max((due - core.clock.now()).total_seconds(), 0.0) + 0.01)
        listener.wait(left)


def _check_fetch(
    worker_id: str, topics: Sequence[TopicRequest], max_tasks: int, long_poll: float
) -> None:
    if not isinstance(worker_id, str) or not worker_id:
        raise TaskLockError("worker_id must be a non-empty string")
    check_text(worker_id, "the worker id", NAME_MAX)
    if not topics:
        raise TaskLockError("fetch_and_lock needs at least one topic")
    for t in topics:
        check_text(t.topic, "the topic", NAME_MAX)
        if t.lock_duration <= timedelta(0):
            raise TaskLockError(f"topic {t.topic!r}: lock_duration must be positive")
    if not 1 <= max_tasks <= MAX_TASKS:
        raise TaskLockError(f"max_tasks must be between 1 and {MAX_TASKS}, got {max_tasks}")
    if not 0 <= long_poll <= MAX_LONG_POLL:
        raise TaskLockError(f"long_poll must be between 0 and {MAX_LONG_POLL:g} seconds")


def _fetch_once(
    core: EngineCore,
    worker_id: str,
    topics: Sequence[TopicRequest],
    max_tasks: int,
    credential: str | None,
) -> list[LockedTask]:
    requests = {t.topic: t for t in topics}
    locks = {t.topic: int(t.lock_duration.total_seconds() * 1000) for t in topics}
    # Only the names asked for when every topic names them; each topic's own filter is
    # applied after.
    wanted = [t.variables for t in topics]
    names = None if any(w is None for w in wanted) else sorted({n for w in wanted for n in w or ()})
    found: list[task_fetch.Fetched] = []
    try:
        with core.transaction(worker_id) as tx:
            match = {t.topic: t.match for t in topics if not t.match.empty}
            found, recorded = task_fetch.fetch_and_lock(
                tx.conn, worker_id, locks, max_tasks, tx.now, names, tx.cause, match, credential
            )
            out = _lockedtasks(core, tx, found, recorded, requests, names)
    except Exception:
        # The locking statement commits on its own: what it locked must not stay locked,
        # its attempt spent, for a worker that never heard of it.
        _give_back(core, [f.task.id for f in found], worker_id)
        raise
    for f in found:  # committed: now they are this worker's
        if f.token is not None:
            core.held.remember(f.task, f.token)
    return out


def _give_back(core: EngineCore, task_ids: list[UUID], worker_id: str) -> None:
    for task_id in task_ids:
        try:
            unlock(core, task_id, worker_id)
        except Exception:  # rolled back with the rest (SQLite), or the database is gone
            log.warning(
                "task %s: could not give it back after a failed fetch", task_id, exc_info=True
            )


def _lockedtasks(
    core: EngineCore,
    tx: Tx,
    found: list[task_fetch.Fetched],
    recorded: bool,
    requests: Mapping[str, TopicRequest],
    names: list[str] | None,
) -> list[LockedTask]:
    """What the worker is told of each locked task (and, where the statement did not, each
    lock's history row)."""
    values = _instances_and_variables(core, tx, found, names)
    out = []
    for f in found:
        task = f.task
        if not recorded:
            task_moves.record_lock(tx, task)
        request = requests[str(task.topic)]
        asked = request.variables
        mine = values[task.instance_id]
        g = core.graph_of(tx, task.instance_id)
        if g.has_mappings or request.local_only:  # the task's token's scopes count
            tok = f.token or tx.token(task.token_id)
            if tok is not None:
                see = scopes.local_view if request.local_only else scopes.overlay
                mine = see(tx, g, tok, dict(mine))
        if asked is not None:
            mine = {n: v for n, v in mine.items() if n in asked}
        out.append(_describe(core, tx, task, mine))
    return out


def _instances_and_variables(
    core: EngineCore, tx: Tx, found: list[task_fetch.Fetched], names: list[str] | None
) -> dict[UUID, dict[str, Any]]:
    """What the fetch statement returned about the instances (PostgreSQL), else one query
    for the instances not yet known and one for the variables of all."""
    if all(f.instance is not None and f.variables is not None for f in found):
        for f in found:
            assert f.instance is not None
            core.remember(f.task.instance_id, *f.instance)
        return {f.task.instance_id: dict(f.variables or {}) for f in found}
    ids = [f.task.instance_id for f in found]
    core.know_instances(tx, ids)
    return variables.load_many(tx.conn, ids, names)


def _describe(core: EngineCore, tx: Tx, task: TaskRow, values: dict[str, Any]) -> LockedTask:
    def_id, key, business_key = core.info_for(tx, task.instance_id)
    assert task.lock_expire_at is not None and task.topic is not None
    node = core.graph(def_id, tx.conn).node(task.node_id)
    backoff = node.retry.delay(task.attempts)
    props = {k: v if isinstance(v, str) else v[-1] for k, v in node.properties.items() if v}
    return LockedTask(
        task.id,
        task.topic,
        str(task.lock_owner),
        task.lock_expire_at,
        task.instance_id,
        business_key,
        key,
        core.definition_version(def_id, tx.conn),
        task.node_id,
        task.attempts,
        task.retries,
        task.priority,
        values,
        backoff,
        task.created_at,
        task.token_id,
        def_id,
        task.error_message,
        task.error_details,
        props,
    )
