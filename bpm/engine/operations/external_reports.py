"""External-task reports: complete, fail, BPMN error, extend lock, unlock.

Each call is one transaction that checks the task's state, its lock owner and the lock's
expiry first; a wrong worker, an expired lock, or an unknown or finished task gets its own
error and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Conflict, Stale, Tx
from bpm.engine.semantics import handler_runs, scopes, steps, task_moves
from bpm.engine.semantics.failures import fail_token
from bpm.errors import (
    BadVariables,
    Forbidden,
    LockExpired,
    TaskLockError,
    TaskNotFound,
    TaskNotLocked,
    WrongWorker,
)
from bpm.limits import ERROR_DETAILS_MAX, ERROR_MESSAGE_MAX, NAME_MAX, check_text
from bpm.states import TaskEvent, TaskKind, TaskState, TokenState
from bpm.store import tasks
from bpm.store.db import first_statement_commits
from bpm.store.rows import TaskRow, TokenRow
from bpm.variables import check_variables


def _held_with_token(
    tx: Tx, task_id: UUID, worker_id: str, attempt: int | None, credential: str | None
) -> tuple[TaskRow, TokenRow]:
    """``_held``, and the task's token read in the same query.

    The read runs as its own statement outside the transaction when it is the first one: a
    plain read holds no lock, so under READ COMMITTED it sees what it would inside, and the
    write batch checks both versions anyway. A complete that moves the token to its next wait
    then needs no BEGIN or COMMIT at all: two round trips.
    """
    with first_statement_commits(tx.conn):
        both = tasks.get_with_token(tx.conn, task_id)
    task = _check_held(tx, both[0] if both else None, task_id, worker_id, attempt, credential)
    assert both is not None
    return task, both[1]


def _held(
    tx: Tx, task_id: UUID, worker_id: str, attempt: int | None, credential: str | None
) -> TaskRow:
    """The task, if ``worker_id`` holds an unexpired lock on it; else the matching error."""
    return _check_held(tx, tasks.get(tx.conn, task_id), task_id, worker_id, attempt, credential)


def _check_held(
    tx: Tx,
    task: TaskRow | None,
    task_id: UUID,
    worker_id: str,
    attempt: int | None = None,
    credential: str | None = None,
) -> TaskRow:
    """``attempt``, when given, must be the attempt the lock is for: a report sent again after
    its first send landed unseen (a connection lost at COMMIT) must not close the next run.
    ``credential``, when given, must be the one the lock was taken with (``check_credential``)."""
    if task is None or task.kind != TaskKind.EXTERNAL:
        raise TaskNotFound(f"no external task has id {task_id}")
    if task.state != TaskState.LOCKED:
        raise TaskNotLocked(f"task {task_id} ({task.node_id}) is {task.state}, not locked")
    check_credential(task, credential)
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


def check_credential(task: TaskRow, credential: str | None) -> None:
    """A lock belongs to the credential it was taken with as well as to its worker id, which
    any caller can choose: with ``credential`` given, only that one may act on the lock (None:
    the caller is not held to one). Checked before the worker id, and the refusal names
    neither the holder nor its worker, which are not the caller's to see."""
    if credential is not None and task.lock_credential != credential:
        raise Forbidden(
            f"task {task.id} is locked under another credential; only that credential may"
            " report on, extend or give back its lock"
        )


def _run(core: EngineCore, worker_id: str, body: Any) -> None:
    """One transaction. A version race with another change (a boundary timer firing at the
    same moment, say) is retried from a fresh read, which then reports what won: telling the
    worker its lock was lost while it still holds it would make it drop a finished result.
    Only a race lost again and again reads as the lock being lost."""

    def once() -> Any:
        with core.transaction(worker_id) as tx:
            return body(tx)

    try:
        # A write that found a row moved on (an extend_lock from this worker's own lock
        # keeper, say) is retried: the fresh read in ``body`` raises the lock error if real.
        nxt = core.retrying(once, also=(Stale,))
    except (Stale, Conflict) as exc:
        raise LockExpired(f"the task changed while {worker_id!r} reported on it: {exc}") from exc
    core.send_next(nxt)


def complete(
    core: EngineCore,
    task_id: UUID,
    worker_id: str,
    values: Mapping[str, Any] | None = None,
    attempt: int | None = None,
    local_values: Mapping[str, Any] | None = None,
    credential: str | None = None,
) -> None:
    """Task DONE, variables written (``local_values`` to the task's own scope), token moved
    on; the next step is dispatched at once."""
    checked = check_variables(values, where=f"complete of task {task_id}")
    local = check_variables(local_values, where=f"complete of task {task_id}")
    fetched = core.held.take(task_id, worker_id)

    def body(tx: Tx) -> Any:
        task, tok = _held_with_token(tx, task_id, worker_id, attempt, credential)
        return go_on(tx, task, tok)

    def go_on(tx: Tx, task: TaskRow, tok: TokenRow) -> Any:
        g = core.graph_of(tx, task.instance_id)
        done = handler_runs.complete_task(tx, g, task, checked, tok, local)
        return steps.carry_through(tx, g, done)

    if fetched is not None and _complete_as_fetched(
        core, worker_id, go_on, fetched, attempt, credential
    ):
        return
    _run(core, worker_id, body)


def _complete_as_fetched(
    core: EngineCore,
    worker_id: str,
    go_on: Callable[[Tx, TaskRow, TokenRow], Any],
    fetched: tuple[TaskRow, TokenRow],
    attempt: int | None,
    credential: str | None,
) -> bool:
    """Complete with the task and token as this engine's fetch returned them: no read, so a
    complete that moves on to the next wait is one statement. False when they are out of
    date (the write's version checks missed, or the lock looks wrong): the caller then reads
    them again and reports what it finds."""
    task, tok = fetched
    try:
        with core.transaction(worker_id) as tx:
            held = _check_held(tx, task, task.id, worker_id, attempt, credential)
            nxt = go_on(tx, held, tok)
    except (Stale, Conflict, TaskLockError):
        return False
    core.send_next(nxt)
    return True


def fail(
    core: EngineCore,
    task_id: UUID,
    worker_id: str,
    error_message: str,
    error_details: str | None = None,
    retries: int = 0,
    retry_timeout: timedelta = timedelta(0),
    attempt: int | None = None,
    credential: str | None = None,
) -> None:
    """Report a failure; ``retries`` left (the worker decides, as in Camunda) offers it again
    after ``retry_timeout``, none fails the token with an incident whose message is
    ``error_message``. The task keeps the worker that failed it, and its lock expiry is when
    the retry timeout ends: that is what the task shows until it is fetched again."""
    core.held.forget(task_id)  # this report changes the task: the fetched rows are stale
    if retries < 0 or retry_timeout < timedelta(0):
        raise TaskLockError("retries and retry_timeout must not be negative")
    check_text(error_message, "the error message", ERROR_MESSAGE_MAX)
    check_text(error_details, "the error details", ERROR_DETAILS_MAX)

    def body(tx: Tx) -> Any:
        task = _held(tx, task_id, worker_id, attempt, credential)
        state = TaskState.READY if retries > 0 else TaskState.FAILED
        retry_at = tx.now + retry_timeout if retries > 0 else None
        task_moves.change(
            tx,
            task,
            state=state,
            event=TaskEvent.FAILED,
            data={
                "attempt": task.attempts,
                "error": error_message,
                "retries": retries,
                "retry_at": retry_at.isoformat() if retry_at else None,
            },
            retries=retries,
            retry_at=retry_at,
            error_message=error_message,
            error_details=error_details,
            keep_lock=True,
            lock_expire_at=tx.now + retry_timeout,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        if retries > 0:
            tx.notify_topics.add(str(task.topic))
            return None
        _fail_token_of(tx, task, kind="external", message=error_message, details=error_details)
        return None

    _run(core, worker_id, body)


def bpmn_error(
    core: EngineCore,
    task_id: UUID,
    worker_id: str,
    code: str,
    message: str = "",
    values: Mapping[str, Any] | None = None,
    attempt: int | None = None,
    credential: str | None = None,
) -> None:
    """A business error: the error boundary for ``code`` (or catch-all) on the activity, else
    on the innermost subprocess around it, takes it; without one the token fails with an
    incident (no retries)."""
    core.held.forget(task_id)  # this report changes the task: the fetched rows are stale
    if not isinstance(code, str) or not code:
        raise BadVariables("a BPMN error needs a non-empty code")
    check_text(code, "the BPMN error code", NAME_MAX)
    check_text(message, "the error message", ERROR_MESSAGE_MAX)
    checked = check_variables(values, where=f"bpmn_error of task {task_id}")

    def body(tx: Tx) -> Any:
        task = _held(tx, task_id, worker_id, attempt, credential)
        g = core.graph_of(tx, task.instance_id)
        scopes.write_for_task(tx, g, task, checked)
        text = f"BPMN error {code}" + (f": {message}" if message else "")
        # The boundary's errorMessageVariable gets the message as the worker gave it.
        handled = handler_runs.catch_bpmn_error(tx, g, task, code, message)
        if handled is not None:
            return steps.carry_through(tx, g, handled.next)
        task_moves.change(
            tx,
            task,
            state=TaskState.FAILED,
            event=TaskEvent.BPMN_ERROR,
            data={"code": code, "message": message},
            retries=0,
            error_message=text,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        _fail_token_of(
            tx,
            task,
            kind="bpmn-error",
            message=f"task {task.node_id!r} threw {text} and no error boundary catches it",
        )
        return None

    _run(core, worker_id, body)


def extend_lock(
    core: EngineCore,
    task_id: UUID,
    worker_id: str,
    new_duration: timedelta,
    credential: str | None = None,
) -> None:
    """The lock now runs until ``now + new_duration``."""
    core.held.forget(task_id)  # this report changes the task: the fetched rows are stale
    if new_duration <= timedelta(0):
        raise TaskLockError("new_duration must be positive")

    def body(tx: Tx) -> Any:
        task = _held(tx, task_id, worker_id, None, credential)
        expire = tx.now + new_duration
        task_moves.change(
            tx,
            task,
            state=TaskState.LOCKED,
            event=TaskEvent.LOCK_EXTENDED,
            data={"lock_expire_at": expire.isoformat()},
            keep_lock=True,
            lock_expire_at=expire,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        return None

    _run(core, worker_id, body)


def unlock(
    core: EngineCore,
    task_id: UUID,
    worker_id: str | None = None,
    credential: str | None = None,
) -> None:
    """Give the task back unrun: READY again, and the attempt it took is returned. With
    ``worker_id``, only that worker's lock is given back; with ``credential``, only a lock
    taken with it."""
    core.held.forget(task_id)  # this report changes the task: the fetched rows are stale

    def body(tx: Tx) -> Any:
        task = tasks.get(tx.conn, task_id)
        if task is None or task.kind != TaskKind.EXTERNAL:
            raise TaskNotFound(f"no external task has id {task_id}")
        if task.state != TaskState.LOCKED:
            raise TaskNotLocked(f"task {task_id} is {task.state}, not locked")
        check_credential(task, credential)
        if worker_id is not None and task.lock_owner != worker_id:
            raise WrongWorker(f"task {task_id} is locked by {task.lock_owner!r}, not {worker_id!r}")
        task_moves.change(
            tx,
            task,
            state=TaskState.READY,
            event=TaskEvent.UNLOCKED,
            data={"owner": task.lock_owner},
            retries=task.retries + 1,
            attempts=task.attempts - 1,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        tx.notify_topics.add(str(task.topic))
        return None

    _run(core, "operator", body)


def _fail_token_of(
    tx: Tx, task: TaskRow, *, kind: str, message: str, details: str | None = None
) -> None:
    tok = tx.token(task.token_id)
    if tok is None or tok.state != TokenState.WAITING:
        raise Stale(f"token of task {task.id} is no longer waiting")
    fail_token(tx, tok, kind=kind, message=message, details=details, task_id=task.id)
