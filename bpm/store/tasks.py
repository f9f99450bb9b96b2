"""External task rows: work for the engine's handler runner or for remote workers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, bindparam, func, literal_column, or_, select, text

from bpm.states import TaskKind, TaskState
from bpm.store.db import pg_sql, raw_one
from bpm.store.rows import TaskRow, TokenRow, from_row
from bpm.store.schema import external_tasks as t
from bpm.store.schema import tokens as token_table
from bpm.store.tokens import COLUMNS as TOKEN_COLUMNS

_COLS = (
    t.c.id,
    t.c.token_id,
    t.c.instance_id,
    t.c.node_id,
    t.c.topic,
    t.c.handler,
    t.c.kind,
    t.c.state,
    t.c.retries,
    t.c.attempts,
    t.c.retry_at,
    t.c.lock_owner,
    t.c.lock_expire_at,
    t.c.error_message,
    t.c.error_details,
    t.c.priority,
    t.c.version,
    t.c.created_at,
    t.c.updated_at,
    t.c.assignee,
    t.c.candidate_groups,
    t.c.candidate_users,
    t.c.due_date,
    t.c.follow_up_date,
    t.c.form,
    t.c.lock_credential,
)
_BY_ID = select(*_COLS).where(t.c.id == bindparam("id"))
_LOCK = (
    t.update()
    .where(
        t.c.id == bindparam("b_id"),
        t.c.state == TaskState.READY,
        t.c.kind == bindparam("b_kind"),
        or_(t.c.retry_at.is_(None), t.c.retry_at <= bindparam("now")),
    )
    .values(
        state=TaskState.LOCKED,
        lock_owner=bindparam("owner"),
        lock_credential=bindparam("credential"),
        lock_expire_at=bindparam("expire"),
        attempts=t.c.attempts + 1,
        retries=t.c.retries - 1,
        version=t.c.version + 1,
        updated_at=bindparam("now"),
    )
    .returning(*_COLS)
)
_FINISH = (
    t.update()
    .where(t.c.id == bindparam("b_id"), t.c.version == bindparam("b_version"))
    .values(
        state=bindparam("state"),
        retry_at=bindparam("retry_at"),
        lock_owner=bindparam("lock_owner"),
        lock_expire_at=bindparam("lock_expire_at"),
        error_message=bindparam("error_message"),
        error_details=bindparam("error_details"),
        retries=bindparam("retries"),
        attempts=bindparam("attempts"),
        version=t.c.version + 1,
        updated_at=bindparam("now"),
    )
)
_OPEN_OF_TOKEN = select(*_COLS).where(
    t.c.token_id == bindparam("id"),
    t.c.state.in_((TaskState.READY, TaskState.LOCKED, TaskState.FAILED)),
)


def next_retry_at(conn: Connection, topics: Sequence[str], now: datetime) -> datetime | None:
    """When the earliest failed task of ``topics`` waiting out its backoff comes due."""
    stmt = select(func.min(t.c.retry_at)).where(
        t.c.topic.in_(topics),
        t.c.state == TaskState.READY,
        t.c.kind == TaskKind.EXTERNAL,
        t.c.retry_at > now,
    )
    due: datetime | None = conn.execute(stmt).scalar()
    return due


def get(conn: Connection, task_id: UUID) -> TaskRow | None:
    row = conn.execute(_BY_ID, {"id": task_id}).first()
    return from_row(TaskRow, row) if row else None


def open_of_token(conn: Connection, token_id: UUID) -> TaskRow | None:
    row = conn.execute(_OPEN_OF_TOKEN, {"id": token_id}).first()
    return from_row(TaskRow, row) if row else None


def of_instance(conn: Connection, instance_id: UUID) -> list[TaskRow]:
    stmt = select(*_COLS).where(t.c.instance_id == instance_id).order_by(t.c.created_at)
    return [from_row(TaskRow, row) for row in conn.execute(stmt)]


def insert(conn: Connection, row: TaskRow) -> None:
    conn.execute(t.insert(), {c.name: getattr(row, c.name) for c in _COLS})


def lock(
    conn: Connection,
    task_id: UUID,
    owner: str,
    expire: datetime,
    now: datetime,
    kind: str = TaskKind.HANDLER,
    credential: str | None = None,
) -> TaskRow | None:
    """READY -> LOCKED, counting the attempt as it starts; None if not READY or not yet due
    (or not of ``kind``: a handler job never takes an external worker's task). ``credential``:
    the API credential the lock is taken with (none: NULL)."""
    params = {"b_id": task_id, "owner": owner, "expire": expire, "now": now, "b_kind": kind}
    row = conn.execute(_LOCK, {**params, "credential": credential}).first()
    return from_row(TaskRow, row) if row else None


def finish_params(
    task: TaskRow,
    *,
    state: str,
    now: datetime,
    retry_at: datetime | None = None,
    retries: int | None = None,
    error_message: str | None = None,
    error_details: str | None = None,
    keep_lock: bool = False,
    lock_expire_at: datetime | None = None,
    attempts: int | None = None,
) -> dict[str, Any]:
    """The parameters of a version-checked change of a task's state (see ``apply_finish``)."""
    return {
        "b_id": task.id,
        "b_version": task.version,
        "state": state,
        "retry_at": retry_at,
        "lock_owner": task.lock_owner if keep_lock else None,
        "lock_expire_at": lock_expire_at or (task.lock_expire_at if keep_lock else None),
        "error_message": error_message if error_message is not None else task.error_message,
        "error_details": error_details if error_details is not None else task.error_details,
        "retries": task.retries if retries is None else retries,
        "now": now,
        "attempts": task.attempts if attempts is None else attempts,
    }


def apply_finish(conn: Connection, params: dict[str, Any]) -> bool:
    """False when the task moved on since the version the change was made from."""
    return conn.execute(_FINISH, params).rowcount == 1


NOTIFY_CHANNEL = "bpm_external_tasks"


def notify_new(conn: Connection, topics: list[str]) -> None:
    """PostgreSQL NOTIFY, delivered when the transaction commits (SQLite has no listeners)."""
    if conn.dialect.name == "postgresql":
        for topic in topics:
            conn.exec_driver_sql(
                "SELECT pg_notify(%(c)s, %(t)s)", {"c": NOTIFY_CHANNEL, "t": topic}
            )


def begin_params(task: TaskRow, expire: datetime, now: datetime) -> dict[str, Any]:
    """What ``begin_reserved`` checks and sets: the task as reserved (its version, LOCKED by
    its owner), and its lock's new end."""
    return {
        "b_id": task.id,
        "b_version": task.version,
        "b_state": TaskState.LOCKED.value,
        "b_owner": task.lock_owner,
        "b_expire": expire,
        "b_now": now,
    }


def as_begun(task: TaskRow, expire: datetime, now: datetime) -> TaskRow:
    """The task as ``begin_reserved`` leaves it when its run begins: what the statement
    below sets, for a write batch that learns only whether it did."""
    return replace(
        task,
        attempts=task.attempts + 1,
        retries=task.retries - 1,
        lock_expire_at=expire,
        version=task.version + 1,
        updated_at=now,
    )


def begin_reserved(conn: Connection, params: dict[str, Any]) -> TaskRow | None:
    """A reserved task's run begins (its attempt counts, its lock runs to the new end), if
    it is still as reserved (``begin_params``); None when it is not. A statement of its
    own, so that a task changed meanwhile fails nothing else; the write batch carries the
    same update (``BEGIN_RESERVED_ID_PG``) where it can."""
    if conn.dialect.name == "postgresql":
        row: Sequence[Any] | None = raw_one(conn, _BEGIN_RESERVED_PG, params)
    else:
        row = conn.execute(_BEGIN_RESERVED, params).first()
    return TaskRow(*row) if row is not None else None


_BEGIN_RESERVED_UPDATE = (
    t.update()
    .where(
        t.c.id == bindparam("b_id"),
        t.c.version == bindparam("b_version"),
        t.c.state == bindparam("b_state"),
        t.c.lock_owner == bindparam("b_owner"),
    )
    .values(
        attempts=t.c.attempts + literal_column("1"),
        retries=t.c.retries - literal_column("1"),
        lock_expire_at=bindparam("b_expire"),
        version=t.c.version + literal_column("1"),
        updated_at=bindparam("b_now"),
    )
)
_BEGIN_RESERVED = _BEGIN_RESERVED_UPDATE.returning(*_COLS)
_BEGIN_RESERVED_PG = pg_sql(_BEGIN_RESERVED)
#: The same update returning only the task's id: a part of the write batch's statement.
BEGIN_RESERVED_ID_PG = pg_sql(_BEGIN_RESERVED_UPDATE.returning(t.c.id))


def set_lock_expiry(conn: Connection, task: TaskRow, expire: datetime) -> None:
    """Adjust the lock taken in this same transaction (no version bump: one change)."""
    conn.execute(
        t.update()
        .where(t.c.id == task.id, t.c.version == task.version)
        .values(lock_expire_at=expire)
    )


def due_handler_tasks(
    conn: Connection, now: datetime, stale_before: datetime, limit: int
) -> list[UUID]:
    """READY handler tasks whose retry time has come, or whose job was sent long ago."""
    stmt = (
        select(t.c.id)
        .where(
            t.c.state == TaskState.READY,
            t.c.kind == TaskKind.HANDLER,
            or_(t.c.retry_at <= now, (t.c.retry_at.is_(None)) & (t.c.updated_at < stale_before)),
        )
        .order_by(t.c.updated_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [row.id for row in conn.execute(stmt)]


def expired_locks(conn: Connection, now: datetime, limit: int) -> list[TaskRow]:
    stmt = (
        select(*_COLS)
        .where(t.c.state == TaskState.LOCKED, t.c.lock_expire_at < now)
        .order_by(t.c.lock_expire_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [from_row(TaskRow, row) for row in conn.execute(stmt)]


_ASSIGN = (
    t.update()
    .where(t.c.id == bindparam("b_id"), t.c.version == bindparam("b_version"))
    .values(assignee=bindparam("assignee"), version=t.c.version + 1, updated_at=bindparam("now"))
)


def set_assignee(conn: Connection, task: TaskRow, assignee: str | None, now: datetime) -> bool:
    """Claim or unclaim a user task under its version; False when it changed meanwhile."""
    done = conn.execute(
        _ASSIGN, {"b_id": task.id, "b_version": task.version, "assignee": assignee, "now": now}
    )
    return done.rowcount == 1


def edit_user_task(conn: Connection, task: TaskRow, now: datetime, **fields: Any) -> bool:
    """Change a user task's people, dates or priority (``fields``: those columns) under its
    version; False when it changed meanwhile."""
    stmt = (
        t.update()
        .where(t.c.id == task.id, t.c.version == task.version)
        .values(**fields, version=t.c.version + 1, updated_at=now)
    )
    return conn.execute(stmt).rowcount == 1


def user_task_of(conn: Connection, token_id: UUID, node_id: str) -> TaskRow | None:
    """The latest user task ``token_id`` had at ``node_id`` (open or done)."""
    stmt = (
        select(*_COLS)
        .where(t.c.token_id == token_id, t.c.node_id == node_id, t.c.kind == TaskKind.USER)
        .order_by(t.c.created_at.desc())
        .limit(1)
    )
    row = conn.execute(stmt).first()
    return from_row(TaskRow, row) if row else None


def open_user_tasks(
    conn: Connection,
    *,
    assignee: str | None = None,
    group: str | None = None,
    candidate_user: str | None = None,
    instance_id: UUID | None = None,
    limit: int = 100,
) -> list[TaskRow]:
    """READY user tasks, oldest first; ``group`` matches a candidate group, ``candidate_user``
    a candidate user."""
    stmt = (
        select(*_COLS)
        .where(t.c.kind == TaskKind.USER, t.c.state == TaskState.READY)
        .order_by(t.c.created_at)
        .limit(limit)
    )
    if assignee is not None:
        stmt = stmt.where(t.c.assignee == assignee)
    if instance_id is not None:
        stmt = stmt.where(t.c.instance_id == instance_id)
    if group is not None:
        stmt = stmt.where(_holds(conn, "candidate_groups", group))
    if candidate_user is not None:
        stmt = stmt.where(_holds(conn, "candidate_users", candidate_user))
    return [from_row(TaskRow, row) for row in conn.execute(stmt)]


def _holds(conn: Connection, column: str, name: str) -> Any:
    """``column`` (a JSON list of names) holds ``name``."""
    if conn.dialect.name == "postgresql":
        member = f"external_tasks.{column} @> CAST(:{column} AS jsonb)"
        return text(member).bindparams(**{column: json.dumps([name])})
    member = (
        f"EXISTS (SELECT 1 FROM json_each(external_tasks.{column}) "
        f"WHERE json_each.value = :{column})"
    )
    return text(member).bindparams(**{column: name})


def get_with_token(conn: Connection, task_id: UUID) -> tuple[TaskRow, TokenRow] | None:
    """A task and its token in one query (completing a task needs both)."""
    if conn.dialect.name == "postgresql":
        row: Sequence[Any] | None = raw_one(conn, _WITH_TOKEN_PG, {"id": task_id})
    else:
        row = conn.execute(_WITH_TOKEN, {"id": task_id}).first()
    if row is None:
        return None
    return TaskRow(*row[: len(_COLS)]), TokenRow(*row[len(_COLS) :])


_WITH_TOKEN = (
    select(*_COLS, *TOKEN_COLUMNS)
    .join_from(t, token_table, token_table.c.id == t.c.token_id)
    .where(t.c.id == bindparam("id"))
)
_WITH_TOKEN_PG = pg_sql(_WITH_TOKEN)
