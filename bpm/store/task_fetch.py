"""Fetch and lock: the statement that gives external workers their tasks, and its SQLite
twin. Apart from ``tasks`` because it is one concern with its own shape: on PostgreSQL a
single statement locks the tasks, returns what the worker needs (token, instance facts,
variables) and writes the lock's history rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, or_, select

from bpm.states import TaskKind, TaskState
from bpm.store.db import first_statement_commits, raw_all
from bpm.store.rows import TaskRow, TokenRow
from bpm.store.schema import external_tasks as t
from bpm.store.task_filters import PG_COLUMNS, PG_CONDITIONS, InstanceMatch, matches
from bpm.store.tasks import _COLS, lock
from bpm.store.tokens import COLUMNS as TOKEN_COLUMNS

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
