"""External task rows: work for the engine's handler runner or for remote workers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, bindparam, func, or_, select, text

from bpm.states import TaskKind, TaskState
from bpm.store.db import first_statement_commits, pg_sql, raw_all, raw_one
from bpm.store.rows import TaskRow, TokenRow, from_row
from bpm.store.schema import external_tasks as t
from bpm.store.schema import tokens as token_table
from bpm.store.task_filters import PG_COLUMNS, PG_CONDITIONS, InstanceMatch, matches
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


_COLUMN_LIST = ", ".join(f"t.{c.name}" for c in _COLS)
#: One statement, its own transaction: lock, return what the worker needs (the token, the
#: instance's facts, its variables), and write each lock's history row, with ids from one
#: block of the history sequence in fetch order (as ``WriteBatch`` numbers its rows).
_FETCH_PG = f"""
WITH r AS (SELECT * FROM jsonb_to_recordset(%(req)s::jsonb)
           AS r(topic text, lock_ms bigint, {PG_COLUMNS})),
picked AS (
  SELECT c.id, r.lock_ms, c.priority, c.created_at FROM r,
  LATERAL (SELECT id, priority, created_at FROM external_tasks
           WHERE state = 'READY' AND kind = 'EXTERNAL' AND topic = r.topic
             AND (retry_at IS NULL OR retry_at <= %(now)s){PG_CONDITIONS}
           ORDER BY priority DESC, created_at LIMIT %(max)s FOR UPDATE SKIP LOCKED) c
  ORDER BY c.priority DESC, c.created_at LIMIT %(max)s),
locked AS (
  UPDATE external_tasks t SET state = 'LOCKED', lock_owner = %(owner)s,
    lock_credential = %(credential)s::text,
    lock_expire_at = %(now)s + picked.lock_ms * interval '1 millisecond',
    attempts = t.attempts + 1, retries = t.retries - 1, version = t.version + 1,
    updated_at = %(now)s
  FROM picked, tokens k, process_instances p
  WHERE t.id = picked.id AND k.id = t.token_id AND p.id = t.instance_id
  RETURNING {_COLUMN_LIST}, {", ".join(f"k.{c.name}" for c in TOKEN_COLUMNS)},
    p.process_def_id, p.process_key, p.business_key,
    (SELECT COALESCE(jsonb_object_agg(v.name, v.value), '{{}}') FROM variables v
     WHERE v.instance_id = t.instance_id
       AND (%(names)s::text[] IS NULL OR v.name = ANY(%(names)s::text[]))),
    t.id AS h_task, t.instance_id AS h_instance, t.token_id AS h_token, t.node_id AS h_node,
    t.attempts AS h_attempt, t.priority AS h_priority, t.created_at AS h_created),
base AS (SELECT nextval('bpm_history_seq') AS b FROM (SELECT 1 FROM locked LIMIT 1) any_row),
history AS (
  INSERT INTO task_events (id, instance_id, task_id, token_id, at, type, node_id, from_state,
                           to_state, actor, data, cause)
  SELECT base.b + row_number() OVER (ORDER BY h_priority DESC, h_created, h_task) - 1,
         h_instance, h_task, h_token, %(now)s, 'LOCKED', h_node, 'READY', 'LOCKED', %(owner)s,
         jsonb_build_object('attempt', h_attempt), %(cause)s
  FROM locked, base)
SELECT * FROM locked"""


@dataclass(frozen=True)
class Fetched:
    """A task a fetch locked. On PostgreSQL the same statement also returns its token, what
    the worker is told about its instance (definition id, process key, business key) and its
    variables (those named, or all); elsewhere those are None and read separately."""

    task: TaskRow
    token: TokenRow | None = None
    instance: tuple[UUID, str, str | None] | None = None
    variables: dict[str, Any] | None = None


def fetch_and_lock(
    conn: Connection,
    owner: str,
    locks: dict[str, int],
    max_tasks: int,
    now: datetime,
    names: list[str] | None = None,
    cause: str | None = None,
    match: dict[str, InstanceMatch] | None = None,
    credential: str | None = None,
) -> tuple[list[Fetched], bool]:
    """Lock up to ``max_tasks`` READY external tasks of the topics in ``locks`` (topic -> lock
    milliseconds), highest priority first, then oldest; rows other workers hold are skipped.
    ``names``: the variables wanted (None: all). Also returns whether the locks' history rows
    (``LOCKED``, with ``cause``) were written too: on PostgreSQL, by the same statement.
    ``match``: per topic, what its tasks' instances must be (none: any). ``credential``: the
    API credential the locks are taken with (none: NULL)."""
    match = match or {}
    if conn.dialect.name == "postgresql":
        req = json.dumps(
            [
                {"topic": t, "lock_ms": ms, **match.get(t, InstanceMatch()).request()}
                for t, ms in locks.items()
            ]
        )
        # Its own transaction when it comes first (no BEGIN, no COMMIT round trip); else
        # part of the caller's, history rows included.
        with first_statement_commits(conn):
            rows = raw_all(
                conn,
                _FETCH_PG,
                {
                    "req": req,
                    "now": now,
                    "max": max_tasks,
                    "owner": owner,
                    "names": names,
                    "cause": cause,
                    "credential": credential,
                },
            )
        tokens_end = len(_COLS) + len(TOKEN_COLUMNS)
        found = [
            Fetched(
                TaskRow(*r[: len(_COLS)]),
                TokenRow(*r[len(_COLS) : tokens_end]),
                (r[tokens_end], r[tokens_end + 1], r[tokens_end + 2]),
                r[tokens_end + 3],
            )
            for r in rows
        ]
        return sorted(found, key=lambda f: (-f.task.priority, f.task.created_at, f.task.id)), True
    tasks = _fetch_one_by_one(conn, owner, locks, max_tasks, now, match, credential)
    return [Fetched(task) for task in tasks], False


def _fetch_one_by_one(
    conn: Connection,
    owner: str,
    locks: dict[str, int],
    max_tasks: int,
    now: datetime,
    match: dict[str, InstanceMatch],
    credential: str | None,
) -> list[TaskRow]:
    """SQLite: the transaction holds the database's write lock, so a plain select will do."""
    stmt = (
        select(t.c.id, t.c.topic, t.c.instance_id)
        .where(
            t.c.state == TaskState.READY,
            t.c.kind == TaskKind.EXTERNAL,
            t.c.topic.in_(list(locks)),
            or_(t.c.retry_at.is_(None), t.c.retry_at <= now),
        )
        .order_by(t.c.priority.desc(), t.c.created_at)
    )
    out: list[TaskRow] = []
    for task_id, topic, instance_id in conn.execute(stmt).all():
        if len(out) >= max_tasks:
            break
        if topic in match and not matches(conn, instance_id, match[topic]):
            continue
        locked = lock(
            conn,
            task_id,
            owner,
            now + timedelta(milliseconds=locks[topic]),
            now,
            kind=TaskKind.EXTERNAL,
            credential=credential,
        )
        if locked is not None:
            out.append(locked)
    return out


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
