"""External tasks: fetch-and-lock, complete, fail, BPMN error, extend lock, unlock.

The calls Camunda 7's external-task API offers, as Python calls over the database (the
transport for trusted services; an HTTP transport can sit on top). Each call is one
transaction that checks the task's state, its lock owner and the lock's expiry first; a wrong
worker, an expired lock, or an unknown or finished task gets its own error and changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from bpm.engine import handler_runs
from bpm.engine.failures import fail_token
from bpm.engine.tx import Conflict, Stale, Tx
from bpm.errors import (
    BadVariables,
    LockExpired,
    TaskLockError,
    TaskNotFound,
    TaskNotLocked,
    WrongWorker,
)
from bpm.states import TaskEvent, TaskKind, TaskState, TokenState
from bpm.store import tasks, tokens, variables
from bpm.store.db import first_statement_commits
from bpm.store.notify import Listener, listen
from bpm.store.rows import TaskRow, TokenRow
from bpm.store.schema import HISTORY_BLOCK
from bpm.variables import check_variables

if TYPE_CHECKING:
    from bpm.engine.engine import Engine

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


def fetch_and_lock(
    engine: Engine,
    worker_id: str,
    topics: Sequence[TopicRequest],
    max_tasks: int = 10,
    long_poll: float = 0.0,
    listener: Listener | None = None,
) -> list[LockedTask]:
    """Lock up to ``max_tasks`` tasks; with ``long_poll`` seconds, wait for one to appear
    (on ``listener`` if given: it must already listen, for these topics at least)."""
    _check_fetch(worker_id, topics, max_tasks, long_poll)
    deadline = time.monotonic() + long_poll
    found = _fetch_once(engine, worker_id, topics, max_tasks)
    if found or long_poll <= 0:
        return found
    if listener is not None:  # it listened before that look: nothing can have been missed
        return _long_poll(engine, worker_id, topics, max_tasks, deadline, listener, False)
    # Nothing yet: listen first, then look again, so a task created in between is not missed.
    with listen(engine.db, {t.topic for t in topics}) as own:
        return _long_poll(engine, worker_id, topics, max_tasks, deadline, own, True)


def _long_poll(
    engine: Engine,
    worker_id: str,
    topics: Sequence[TopicRequest],
    max_tasks: int,
    deadline: float,
    listener: Listener,
    look: bool,
) -> list[LockedTask]:
    """(Look, then) sleep until a task is offered (NOTIFY) or a failed one's retry_at comes
    due (no one is told of that), and look again, until ``deadline``."""
    while True:
        found = _fetch_once(engine, worker_id, topics, max_tasks) if look else []
        look = True
        left = deadline - time.monotonic()
        if found or left <= 0:
            return found
        with engine.db.transaction() as conn:
            due = tasks.next_retry_at(conn, [t.topic for t in topics], engine.clock.now())
        if due is not None:
            left = min(left, max((due - engine.clock.now()).total_seconds(), 0.0) + 0.01)
        listener.wait(left)


def _check_fetch(
    worker_id: str, topics: Sequence[TopicRequest], max_tasks: int, long_poll: float
) -> None:
    if not isinstance(worker_id, str) or not worker_id:
        raise TaskLockError("worker_id must be a non-empty string")
    if not topics:
        raise TaskLockError("fetch_and_lock needs at least one topic")
    for t in topics:
        if t.lock_duration <= timedelta(0):
            raise TaskLockError(f"topic {t.topic!r}: lock_duration must be positive")
    if not 1 <= max_tasks <= MAX_TASKS:
        raise TaskLockError(f"max_tasks must be between 1 and {MAX_TASKS}, got {max_tasks}")
    if not 0 <= long_poll <= MAX_LONG_POLL:
        raise TaskLockError(f"long_poll must be between 0 and {MAX_LONG_POLL:g} seconds")


def _fetch_once(
    engine: Engine, worker_id: str, topics: Sequence[TopicRequest], max_tasks: int
) -> list[LockedTask]:
    requests = {t.topic: t for t in topics}
    locks = {t.topic: int(t.lock_duration.total_seconds() * 1000) for t in topics}
    # Only the names asked for when every topic names them; each topic's own filter is
    # applied after.
    wanted = [t.variables for t in topics]
    names = None if any(w is None for w in wanted) else sorted({n for w in wanted for n in w or ()})
    found: list[tasks.Fetched] = []
    try:
        with engine.transaction(worker_id) as tx:
            found, recorded = tasks.fetch_and_lock(
                tx.conn, worker_id, locks, max_tasks, tx.now, names, tx.cause
            )
            out = _lockedtasks(engine, tx, found, recorded, requests, names)
    except Exception:
        # The locking statement commits on its own: what it locked must not stay locked,
        # its attempt spent, for a worker that never heard of it.
        _give_back(engine, [f.task.id for f in found], worker_id)
        raise
    for f in found:  # committed: now they are this worker's
        if f.token is not None:
            engine.held.remember(f.task, f.token)
    return out


def _give_back(engine: Engine, task_ids: list[UUID], worker_id: str) -> None:
    for task_id in task_ids:
        try:
            unlock(engine, task_id, worker_id)
        except Exception:  # rolled back with the rest (SQLite), or the database is gone
            log.warning(
                "task %s: could not give it back after a failed fetch", task_id, exc_info=True
            )


def _lockedtasks(
    engine: Engine,
    tx: Tx,
    found: list[tasks.Fetched],
    recorded: bool,
    requests: Mapping[str, TopicRequest],
    names: list[str] | None,
) -> list[LockedTask]:
    """What the worker is told of each locked task (and, where the statement did not, each
    lock's history row)."""
    values = _instances_and_variables(engine, tx, found, names)
    out = []
    for task in (f.task for f in found):
        if not recorded:
            tx.history.task(
                instance_id=task.instance_id,
                task_id=task.id,
                token_id=task.token_id,
                at=tx.now,
                type=TaskEvent.LOCKED,
                node_id=task.node_id,
                from_state=TaskState.READY,
                to_state=TaskState.LOCKED,
                actor=task.lock_owner,
                data={"attempt": task.attempts},
            )
        asked = requests[str(task.topic)].variables
        mine = values[task.instance_id]
        if asked is not None:
            mine = {n: v for n, v in mine.items() if n in asked}
        out.append(_describe(engine, tx, task, mine))
    return out


def _instances_and_variables(
    engine: Engine, tx: Tx, found: list[tasks.Fetched], names: list[str] | None
) -> dict[UUID, dict[str, Any]]:
    """What the fetch statement returned about the instances (PostgreSQL), else one query
    for the instances not yet known and one for the variables of all."""
    if all(f.instance is not None and f.variables is not None for f in found):
        for f in found:
            assert f.instance is not None
            engine.remember(f.task.instance_id, *f.instance)
        return {f.task.instance_id: dict(f.variables or {}) for f in found}
    ids = [f.task.instance_id for f in found]
    engine.know_instances(tx, ids)
    return variables.load_many(tx.conn, ids, names)


def _describe(engine: Engine, tx: Tx, task: TaskRow, values: dict[str, Any]) -> LockedTask:
    def_id, key, business_key = engine.info_for(tx, task.instance_id)
    assert task.lock_expire_at is not None and task.topic is not None
    backoff = engine.graph(def_id, tx.conn).node(task.node_id).retry.delay(task.attempts)
    return LockedTask(
        task.id,
        task.topic,
        str(task.lock_owner),
        task.lock_expire_at,
        task.instance_id,
        business_key,
        key,
        engine.definition_version(def_id, tx.conn),
        task.node_id,
        task.attempts,
        task.retries,
        task.priority,
        values,
        backoff,
    )


def _held_with_token(
    tx: Tx, task_id: UUID, worker_id: str, attempt: int | None = None
) -> tuple[TaskRow, TokenRow]:
    """``_held``, and the task's token read in the same query.

    The read runs as its own statement outside the transaction when it is the first one: a
    plain read holds no lock, so under READ COMMITTED it sees what it would inside, and the
    write batch checks both versions anyway. A complete that moves the token to its next wait
    then needs no BEGIN or COMMIT at all: two round trips.
    """
    with first_statement_commits(tx.conn):
        both = tasks.get_with_token(tx.conn, task_id)
    task = _check_held(tx, both[0] if both else None, task_id, worker_id, attempt)
    assert both is not None
    return task, both[1]


def _held(tx: Tx, task_id: UUID, worker_id: str, attempt: int | None = None) -> TaskRow:
    """The task, if ``worker_id`` holds an unexpired lock on it; else the matching error."""
    return _check_held(tx, tasks.get(tx.conn, task_id), task_id, worker_id, attempt)


def _check_held(
    tx: Tx, task: TaskRow | None, task_id: UUID, worker_id: str, attempt: int | None = None
) -> TaskRow:
    """``attempt``, when given, must be the attempt the lock is for: a report sent again after
    its first send landed unseen (a connection lost at COMMIT) must not close the next run."""
    if task is None or task.kind != TaskKind.EXTERNAL:
        raise TaskNotFound(f"no external task has id {task_id}")
    if task.state != TaskState.LOCKED:
        raise TaskNotLocked(f"task {task_id} ({task.node_id}) is {task.state}, not locked")
    if task.lock_owner != worker_id:
        raise WrongWorker(f"task {task_id} is locked by {task.lock_owner!r}, not {worker_id!r}")
    if attempt is not None and task.attempts != attempt:
        raise TaskNotLocked(
            f"task {task_id} is locked for attempt {task.attempts}, not {attempt}: the report "
            f"of attempt {attempt} was already taken"
        )
    if task.lock_expire_at is not None and task.lock_expire_at <= tx.now:
        raise LockExpired(
            f"the lock of {worker_id!r} on task {task_id} expired at "
            f"{task.lock_expire_at.isoformat()}"
        )
    return task


def _run(engine: Engine, worker_id: str, body: Any) -> None:
    """One transaction. A version race with another change (a boundary timer firing at the
    same moment, say) is retried from a fresh read, which then reports what won: telling the
    worker its lock was lost while it still holds it would make it drop a finished result.
    Only a race lost again and again reads as the lock being lost."""

    def once() -> Any:
        with engine.transaction(worker_id) as tx:
            return body(tx)

    try:
        # A write that found a row moved on (an extend_lock from this worker's own lock
        # keeper, say) is retried: the fresh read in ``body`` raises the lock error if real.
        nxt = engine.retrying(once, also=(Stale,))
    except (Stale, Conflict) as exc:
        raise LockExpired(f"the task changed while {worker_id!r} reported on it: {exc}") from exc
    engine.carry_on(nxt)


def complete(
    engine: Engine,
    task_id: UUID,
    worker_id: str,
    values: Mapping[str, Any] | None = None,
    attempt: int | None = None,
) -> None:
    """Task DONE, variables written, token moved on; the next step is dispatched at once."""
    checked = check_variables(values, where=f"complete of task {task_id}")
    fetched = engine.held.take(task_id, worker_id)

    def body(tx: Tx) -> Any:
        task, tok = _held_with_token(tx, task_id, worker_id, attempt)
        return go_on(tx, task, tok)

    def go_on(tx: Tx, task: TaskRow, tok: TokenRow) -> Any:
        g = engine.graph(engine.info_for(tx, task.instance_id)[0], tx.conn)
        return engine.continue_in(tx, g, handler_runs.complete_task(tx, g, task, checked, tok))

    if fetched is not None and _complete_as_fetched(engine, worker_id, fetched, go_on, attempt):
        return
    _run(engine, worker_id, body)


def _complete_as_fetched(
    engine: Engine,
    worker_id: str,
    fetched: tuple[TaskRow, TokenRow],
    go_on: Callable[[Tx, TaskRow, TokenRow], Any],
    attempt: int | None,
) -> bool:
    """Complete with the task and token as this engine's fetch returned them: no read, so a
    complete that moves on to the next wait is one statement. False when they are out of
    date (the write's version checks missed, or the lock looks wrong): the caller then reads
    them again and reports what it finds."""
    task, tok = fetched
    try:
        with engine.transaction(worker_id) as tx:
            nxt = go_on(tx, _check_held(tx, task, task.id, worker_id, attempt), tok)
    except (Stale, Conflict, TaskLockError):
        return False
    engine.carry_on(nxt)
    return True


def fail(
    engine: Engine,
    task_id: UUID,
    worker_id: str,
    error_message: str,
    error_details: str | None = None,
    retries: int = 0,
    retry_timeout: timedelta = timedelta(0),
    attempt: int | None = None,
) -> None:
    """Report a failure; ``retries`` left (the worker decides, as in Camunda) offers it again
    after ``retry_timeout``, none fails the token with an incident."""
    engine.held.forget(task_id)  # this report changes the task: the fetched rows are stale
    if retries < 0 or retry_timeout < timedelta(0):
        raise TaskLockError("retries and retry_timeout must not be negative")

    def body(tx: Tx) -> Any:
        task = _held(tx, task_id, worker_id, attempt)
        state = TaskState.READY if retries > 0 else TaskState.FAILED
        retry_at = tx.now + retry_timeout if retries > 0 else None
        tx.finish_task(
            task,
            state=state,
            retries=retries,
            retry_at=retry_at,
            error_message=error_message,
            error_details=error_details,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        tx.history.task(
            instance_id=task.instance_id,
            task_id=task.id,
            token_id=task.token_id,
            at=tx.now,
            type=TaskEvent.FAILED,
            node_id=task.node_id,
            from_state=TaskState.LOCKED,
            to_state=state,
            actor=worker_id,
            data={
                "attempt": task.attempts,
                "error": error_message,
                "retries": retries,
                "retry_at": retry_at.isoformat() if retry_at else None,
            },
        )
        if retries > 0:
            tx.notify_topics.add(str(task.topic))
            return None
        _fail_token_of(
            tx,
            task,
            kind="external",
            message=f"task {task.node_id!r} failed after {task.attempts} "
            f"attempt{'s' if task.attempts != 1 else ''}: {error_message}",
            details=error_details,
        )
        return None

    _run(engine, worker_id, body)


def bpmn_error(
    engine: Engine,
    task_id: UUID,
    worker_id: str,
    code: str,
    message: str = "",
    values: Mapping[str, Any] | None = None,
    attempt: int | None = None,
) -> None:
    """A business error: the error boundary for ``code`` (or catch-all) on the activity, else
    on the innermost subprocess around it, takes it; without one the token fails with an
    incident (no retries)."""
    engine.held.forget(task_id)  # this report changes the task: the fetched rows are stale
    if not isinstance(code, str) or not code:
        raise BadVariables("a BPMN error needs a non-empty code")
    checked = check_variables(values, where=f"bpmn_error of task {task_id}")

    def body(tx: Tx) -> Any:
        task = _held(tx, task_id, worker_id, attempt)
        tx.write_variables(task.instance_id, checked)
        text = f"BPMN error {code}" + (f": {message}" if message else "")
        g = engine.graph(engine.info_for(tx, task.instance_id)[0], tx.conn)
        caught = handler_runs.catch_bpmn_error(tx, g, task, code, text)
        if caught is not None:
            return engine.continue_in(tx, g, caught)
        tx.finish_task(
            task,
            state=TaskState.FAILED,
            retries=0,
            error_message=text,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        tx.history.task(
            instance_id=task.instance_id,
            task_id=task.id,
            token_id=task.token_id,
            at=tx.now,
            type=TaskEvent.BPMN_ERROR,
            node_id=task.node_id,
            from_state=TaskState.LOCKED,
            to_state=TaskState.FAILED,
            actor=worker_id,
            data={"code": code, "message": message},
        )
        _fail_token_of(
            tx,
            task,
            kind="bpmn-error",
            message=f"task {task.node_id!r} threw {text} and no error boundary catches it",
        )
        return None

    _run(engine, worker_id, body)


def extend_lock(engine: Engine, task_id: UUID, worker_id: str, new_duration: timedelta) -> None:
    """The lock now runs until ``now + new_duration``."""
    engine.held.forget(task_id)  # this report changes the task: the fetched rows are stale
    if new_duration <= timedelta(0):
        raise TaskLockError("new_duration must be positive")

    def body(tx: Tx) -> Any:
        task = _held(tx, task_id, worker_id)
        expire = tx.now + new_duration
        tx.finish_task(
            task,
            state=TaskState.LOCKED,
            keep_lock=True,
            lock_expire_at=expire,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        tx.history.task(
            instance_id=task.instance_id,
            task_id=task.id,
            token_id=task.token_id,
            at=tx.now,
            type=TaskEvent.LOCK_EXTENDED,
            node_id=task.node_id,
            from_state=TaskState.LOCKED,
            to_state=TaskState.LOCKED,
            actor=worker_id,
            data={"lock_expire_at": expire.isoformat()},
        )
        return None

    _run(engine, worker_id, body)


def unlock(engine: Engine, task_id: UUID, worker_id: str | None = None) -> None:
    """Give the task back unrun: READY again, and the attempt it took is returned. With
    ``worker_id``, only that worker's lock is given back."""
    engine.held.forget(task_id)  # this report changes the task: the fetched rows are stale

    def body(tx: Tx) -> Any:
        task = tasks.get(tx.conn, task_id)
        if task is None or task.kind != TaskKind.EXTERNAL:
            raise TaskNotFound(f"no external task has id {task_id}")
        if task.state != TaskState.LOCKED:
            raise TaskNotLocked(f"task {task_id} is {task.state}, not locked")
        if worker_id is not None and task.lock_owner != worker_id:
            raise WrongWorker(f"task {task_id} is locked by {task.lock_owner!r}, not {worker_id!r}")
        tx.finish_task(
            task,
            state=TaskState.READY,
            retries=task.retries + 1,
            attempts=task.attempts - 1,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        tx.history.task(
            instance_id=task.instance_id,
            task_id=task.id,
            token_id=task.token_id,
            at=tx.now,
            type=TaskEvent.UNLOCKED,
            node_id=task.node_id,
            from_state=TaskState.LOCKED,
            to_state=TaskState.READY,
            actor=tx.actor,
            data={"owner": task.lock_owner},
        )
        tx.notify_topics.add(str(task.topic))
        return None

    _run(engine, "operator", body)


def _fail_token_of(
    tx: Tx, task: TaskRow, *, kind: str, message: str, details: str | None = None
) -> None:
    tok = tokens.get(tx.conn, task.token_id)
    if tok is None or tok.state != TokenState.WAITING:
        raise Stale(f"token of task {task.id} is no longer waiting")
    fail_token(tx, tok, kind=kind, message=message, details=details, task_id=task.id)
