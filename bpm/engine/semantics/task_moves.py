"""Task state changes, each version-checked and recorded in history in the same transaction.

As ``moves.move`` is for tokens, ``change`` is the one way a task changes state: the change
goes into the transaction's write batch (checked against the version the task was read at),
and its history row takes its from-state from that same row, so no caller writes one by hand.
A new task is ``create``d (or ``create_locked`` for the runner that will run it at once); a
READY task is ``lock``ed by one statement that counts the attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any
from uuid import UUID

from bpm.engine.core.tx import Conflict, Tx
from bpm.states import TaskEvent, TaskKind, TaskState
from bpm.store import tasks
from bpm.store.history import HistoryBuffer
from bpm.store.ids import new_id
from bpm.store.rows import TaskRow, TokenRow


def change(
    tx: Tx,
    task: TaskRow,
    *,
    state: str,
    event: str,
    miss: str,
    message: str,
    data: dict[str, Any] | None = None,
    **fields: Any,
) -> None:
    """Move ``task`` (as read) to ``state``: written at flush under its version (a miss raises
    ``Stale`` or ``Conflict``, as ``miss`` says, with ``message``), with its history row.
    ``fields`` are the other columns the change sets (``tasks.finish_params``)."""
    tx.finish_task(task, state=state, miss=miss, message=message, **fields)
    _history(tx, task, event, task.state, state, data)


def new_task(
    tx: Tx,
    tok: TokenRow,
    node_id: str,
    kind: TaskKind,
    *,
    topic: str | None = None,
    handler: str | None = None,
    retries: int = 0,
    priority: int = 0,
    assignee: str | None = None,
    candidate_groups: list[str] | None = None,
    **user_task: Any,
) -> TaskRow:
    """The row of a READY task for ``tok`` at ``node_id``, not yet attempted (``create``
    writes it). ``user_task``: the other columns of a user task (candidate users, dates,
    form)."""
    return TaskRow(
        new_id(),
        tok.id,
        tok.instance_id,
        node_id,
        topic,
        handler,
        kind,
        TaskState.READY,
        retries,
        0,
        None,
        None,
        None,
        None,
        None,
        priority,
        0,
        tx.now,
        tx.now,
        assignee=assignee,
        candidate_groups=candidate_groups,
        **user_task,
    )


def create(tx: Tx, task: TaskRow, data: dict[str, Any]) -> None:
    """A new task, inserted at flush, with its ``CREATED`` row."""
    tx.insert_task(task)
    _history(tx, task, TaskEvent.CREATED, None, task.state, data)


def create_locked(
    tx: Tx, task: TaskRow, data: dict[str, Any], lock_for: timedelta, *, reserved: bool = False
) -> TaskRow:
    """A new task, inserted already locked by this transaction's actor, which runs it right
    after commit (saving a transaction): the attempt counts from here, and history reads as
    if it had been created and then locked.

    ``reserved``: it runs later in the same run (a fork's other branches, in process).
    Nobody else takes it while the lock lasts, and its attempt counts only when its run
    begins (``begin_reserved``), so a process that dies before reaching it leaves a task
    the lock scan offers again without an attempt used up; its ``LOCKED`` row says
    ``reserved`` instead of an attempt."""
    counted = 0 if reserved else 1
    locked = replace(
        task,
        state=TaskState.LOCKED,
        lock_owner=tx.actor,
        attempts=task.attempts + counted,
        retries=task.retries - counted,
        lock_expire_at=tx.now + lock_for,
        version=task.version + 1,
    )
    tx.insert_task(locked)
    _history(tx, task, TaskEvent.CREATED, None, task.state, data)
    said = {"reserved": True} if reserved else {"attempt": locked.attempts}
    _history(tx, locked, TaskEvent.LOCKED, task.state, locked.state, said)
    return locked


def begin_reserved(tx: Tx, task: TaskRow, lock_for: timedelta) -> Callable[[], TaskRow | None]:
    """The run of a reserved task begins: its attempt counts and its lock runs from now (a
    ``LOCK_EXTENDED`` row with the attempt; the reservation's ``LOCKED`` row has none).
    What it returns tells, once the transaction has committed, the task as begun, or None
    when it changed nothing because the task was no longer as reserved (cancelled, or
    offered again after its lock expired). On PostgreSQL the transaction's write statement
    does it (``WriteBatch.begin_reserved``), no statement of its own. Its instance's row is
    locked first, as for any row a transaction changes that it did not create."""
    tx.lock_instance(task.instance_id)
    expire = tx.now + lock_for
    params = tasks.begin_params(task, expire, tx.now)
    if tx.conn.dialect.name == "postgresql" and tx.batch.begin is None:
        begun = tasks.as_begun(task, expire, tx.now)
        row = _history_row(tx, task, TaskEvent.LOCK_EXTENDED, {"attempt": begun.attempts})
        pending = tx.batch.begin_reserved(params, row)
        return lambda: begun if pending.begun else None
    got = tasks.begin_reserved(tx.conn, params)
    if got is not None:
        _history(
            tx, task, TaskEvent.LOCK_EXTENDED, task.state, got.state, {"attempt": got.attempts}
        )
    return lambda: got


def _history_row(tx: Tx, task: TaskRow, event: str, data: dict[str, Any]) -> dict[str, Any]:
    """The history row of a change that leaves the task in its state, not yet written."""
    rows = HistoryBuffer()
    _history(tx, task, event, task.state, task.state, data, into=rows)
    return rows.rows[0][1]


def release(tx: Tx, task: TaskRow) -> None:
    """A runner gives back a task it locked and did not run: READY again, with a job to run
    it, its attempts as they were."""
    change(
        tx,
        task,
        state=TaskState.READY,
        event=TaskEvent.UNLOCKED,
        data={"owner": task.lock_owner},
        retry_at=tx.now,
        miss="stale",
        message=f"task {task.id} changed before its runner gave it back",
    )
    tx.run_handler_later(task.id)


def lock(
    tx: Tx,
    task_id: UUID,
    lock_for: timedelta,
    kind: str = TaskKind.HANDLER,
    credential: str | None = None,
) -> TaskRow | None:
    """READY -> LOCKED for this transaction's actor, counting the attempt as it starts; None
    when the task is not READY and due (the statement itself checks, so two runners cannot
    both lock it). ``credential``: who else the lock is held for (``tasks.lock``)."""
    task = tasks.lock(tx.conn, task_id, tx.actor, tx.now + lock_for, tx.now, kind, credential)
    if task is not None:
        record_lock(tx, task)
    return task


def record_lock(tx: Tx, task: TaskRow) -> None:
    """The history row of a lock a locking statement took (it locks READY tasks only)."""
    _history(tx, task, TaskEvent.LOCKED, TaskState.READY, task.state, {"attempt": task.attempts})


def assign(tx: Tx, task: TaskRow, user: str | None, event: str) -> None:
    """Claim (``user``) or unclaim (None) a user task under its version; its state stays."""
    if not tasks.set_assignee(tx.conn, task, user, tx.now):
        raise Conflict(f"user task {task.id} changed meanwhile")
    _history(tx, task, event, task.state, task.state, {"assignee": user, "was": task.assignee})


def edit(tx: Tx, task: TaskRow, changes: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    """Change a user task's people, dates or priority under its version, its state unchanged:
    one version per ``(event, data, columns)`` of ``changes``, each with its history row (so
    replay counts the versions as the rows)."""
    for event, data, columns in changes:
        if not tasks.edit_user_task(tx.conn, task, tx.now, **columns):
            raise Conflict(f"user task {task.id} changed meanwhile")
        _history(tx, task, event, task.state, task.state, data)
        task = replace(task, version=task.version + 1)


def _history(
    tx: Tx,
    task: TaskRow,
    event: str,
    from_state: str | None,
    to_state: str,
    data: dict[str, Any] | None,
    into: HistoryBuffer | None = None,
) -> None:
    """The task's history row, in the transaction's history (or ``into``)."""
    (into if into is not None else tx.history).task(
        instance_id=task.instance_id,
        task_id=task.id,
        token_id=task.token_id,
        at=tx.now,
        type=event,
        node_id=task.node_id,
        from_state=from_state,
        to_state=to_state,
        actor=tx.actor,
        data=data,
    )
