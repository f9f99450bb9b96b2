"""The writes of one engine transaction, sent together just before commit.

The engine decides everything first and writes last: task changes, new tasks, variables, token
moves and history rows are collected here and, on PostgreSQL, written by one statement (data-
modifying CTEs over arrays), so a step costs a few round trips however much it records. Every
guarded update still checks its version; on a miss the statement itself fails (SQLSTATE BPM01,
raised by ``bpm_guard_miss``), so nothing of it stays even when it ran as its own transaction.
That lets a transaction whose only statement is this one skip BEGIN and COMMIT (autocommit):
one round trip for a whole step. The same statement can read back an instance's variables and
send the long-poll wake-ups, so a handler step needs nothing else.
On SQLite (and for unusually large batches) the same writes go out one statement at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, NoReturn
from uuid import UUID

import orjson
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from bpm.store import instances, tasks, tokens, variables
from bpm.store.db import first_statement_commits, raw_one
from bpm.store.history import COMMON_COLUMNS, EXTRA_COLUMNS, TABLES, HistoryBuffer
from bpm.store.rows import TaskRow, TokenRow
from bpm.store.schema import HISTORY_BLOCK, external_tasks


class BatchMiss(Exception):
    """A guarded update found its row changed; ``kind`` says how the engine should take it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(kind, message)
        self.kind = kind
        self.message = message


@dataclass
class _TaskChange:
    params: dict[str, Any]
    miss: str
    message: str


@dataclass
class _InstanceEnd:
    """An instance state change decided without reading the row (its last token ended); the
    write locks the row, checks it is still in ``only_from`` and fills in the history row's
    ``from_state``. A mismatch is a miss: something changed the instance meanwhile."""

    instance_id: UUID
    state: str
    ended_at: datetime | None
    only_from: tuple[str, ...]
    row: dict[str, Any]


@dataclass
class WriteBatch:
    history: HistoryBuffer = field(default_factory=HistoryBuffer)
    task_changes: list[_TaskChange] = field(default_factory=list)
    task_inserts: list[TaskRow] = field(default_factory=list)
    values: dict[UUID, dict[str, Any]] = field(default_factory=dict)
    token_moves: dict[UUID, tuple[int, TokenRow]] = field(default_factory=dict)
    #: Topics whose workers are woken (PostgreSQL NOTIFY) when this batch commits.
    notify: set[str] = field(default_factory=set)
    #: An instance whose variables, as this batch leaves them, are copied into the dict.
    read_back: tuple[UUID, dict[str, Any]] | None = None
    instance_ends: list[_InstanceEnd] = field(default_factory=list)
    #: Instances whose row the transaction has locked already: their variable writers need
    #: not queue for it again.
    locked_instances: set[UUID] = field(default_factory=set)
    now: Any = None

    def change_task(self, params: dict[str, Any], miss: str, message: str) -> None:
        self.task_changes.append(_TaskChange(params, miss, message))

    def end_instance(
        self,
        instance_id: UUID,
        state: str,
        ended_at: datetime | None,
        only_from: tuple[str, ...],
        row: dict[str, Any],
    ) -> None:
        """PostgreSQL: change the instance's state in the write statement itself (saves a
        statement, and with it BEGIN and COMMIT when the batch is all a step writes).

        A mismatch is not retried (``stale``): the instance ended or was ended by something
        else, and this transaction's decision no longer holds."""
        self.instance_ends.append(_InstanceEnd(instance_id, state, ended_at, only_from, row))

    def ends(self, instance_id: UUID) -> bool:
        """Whether this batch already changes the instance's state."""
        return any(e.instance_id == instance_id for e in self.instance_ends)

    def flush(self, conn: Connection) -> None:
        rows = (
            len(self.history)
            + len(self.task_changes)
            + len(self.task_inserts)
            + sum(len(v) for v in self.values.values())
            + len(self.token_moves)
        )
        if rows == 0 and self.read_back is None and not self.notify:
            return
        if conn.dialect.name == "postgresql" and len(self.history) <= HISTORY_BLOCK:
            waiting = [iid for iid in self.values if iid not in self.locked_instances]
            if waiting:
                _serialise_variable_writers(conn, sorted(waiting, key=str))
            self._flush_one_statement(conn)
        else:
            self._flush_each(conn)
        self.__init__()  # type: ignore[misc]

    def _flush_token_moves(self, conn: Connection) -> None:
        """Write the token moves, each under the version it was moved from."""
        for token_id, (expected, row) in self.token_moves.items():
            if not tokens.move(conn, expected, row):
                raise BatchMiss("conflict", f"token {token_id} changed since version {expected}")
        self.token_moves.clear()

    def _flush_each(self, conn: Connection) -> None:
        for end in self.instance_ends:  # instance rows first: the engine's lock order
            left = instances.transition(
                conn, end.instance_id, end.state, self.now, end.ended_at, end.only_from
            )
            if left is None:
                raise BatchMiss("stale", _moved_on(end))
            end.row["from_state"] = left
        for change in self.task_changes:
            if not tasks.apply_finish(conn, change.params):
                raise BatchMiss(change.miss, change.message)
        for task in self.task_inserts:
            tasks.insert(conn, task)
        for instance_id, values in self.values.items():
            variables.write(conn, instance_id, values, self.now)
        self._flush_token_moves(conn)
        self.history.flush(conn)
        if self.notify:
            tasks.notify_new(conn, sorted(self.notify))
        if self.read_back is not None:
            instance_id, into = self.read_back
            into.update(variables.load(conn, instance_id))

    def _flush_one_statement(self, conn: Connection) -> None:
        read_id, into = self.read_back if self.read_back is not None else (None, None)
        own = dict(self.values.get(read_id, {})) if read_id is not None else {}
        params: dict[str, Any] = {
            "tu": _json([_as_task_row(c.params) for c in self.task_changes]),
            "ti": _json([{c: getattr(r, c) for c in _TASK_COLUMNS} for r in self.task_inserts]),
            "vu": _json(
                [
                    {"instance_id": iid, "name": name, "value": value, "updated_at": self.now}
                    for iid, named in self.values.items()
                    for name, value in named.items()
                ]
            ),
            "ku": _json(
                [
                    {
                        "id": row.id,
                        "expected": expected,
                        "state": row.state,
                        "node_id": row.node_id,
                        "via_flow": row.via_flow,
                        "wait_kind": row.wait_kind,
                        "waits_for": row.waits_for,
                        "version": row.version,
                        "updated_at": row.updated_at,
                    }
                    for expected, row in self.token_moves.values()
                ]
            ),
            "h": _json(
                [{"k": k, "tbl": name, **row} for k, (name, row) in enumerate(self.history.rows)]
            ),
            "ie": _json(
                [
                    {
                        "id": e.instance_id,
                        "state": e.state,
                        "now": self.now,
                        "ended_at": e.ended_at,
                        "only_from": list(e.only_from),
                        "k": self._index(e.row),
                    }
                    for e in self.instance_ends
                ]
            ),
        }
        params["nie"] = len(self.instance_ends)
        # The ids again as arrays: the planner can use an index scan for them (a join with the
        # recordset itself is estimated at 100 rows and planned as a sequential scan).
        params["tui"] = sorted({c.params["b_id"] for c in self.task_changes})
        params["kui"] = sorted(self.token_moves)
        params["ntu"] = len(params["tui"])
        params["nku"] = len(self.token_moves)
        params["notify"] = sorted(self.notify)
        params["ri"] = read_id
        try:
            with first_statement_commits(conn):
                row = raw_one(conn, _flush_sql(self._parts()), params)
            assert row is not None
            stored, left = row[0], row[3] or {}
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) != MISS_SQLSTATE:
                raise
            self._raise_miss(json.loads(exc.orig.diag.message_primary or "{}"))  # type: ignore[union-attr]
        for end in self.instance_ends:
            end.row["from_state"] = left.get(str(self._index(end.row)))
        if into is not None:
            into.update({**(stored or {}), **own})

    def _parts(self) -> frozenset[str]:
        present = {
            "ie": self.instance_ends,
            "tu": self.task_changes,
            "ti": self.task_inserts,
            "vu": self.values,
            "ku": self.token_moves,
            "notify": self.notify,
            "read": self.read_back,
        }
        return frozenset(
            [
                *(p for p, there in present.items() if there),
                *(name for name, _ in self.history.rows),
            ]
        )

    def _index(self, row: dict[str, Any]) -> int:
        return next(k for k, (_, r) in enumerate(self.history.rows) if r is row)

    def _raise_miss(self, report: dict[str, Any]) -> NoReturn:
        changed = {UUID(x) for x in report.get("tu") or ()}
        moved = {UUID(x) for x in report.get("ku") or ()}
        for change in self.task_changes:
            if change.params["b_id"] not in changed:
                raise BatchMiss(change.miss, change.message)
        for token_id, (expected, _) in self.token_moves.items():
            if token_id not in moved:
                raise BatchMiss("conflict", f"token {token_id} changed since version {expected}")
        ended = {UUID(x) for x in report.get("ie") or ()}
        for end in self.instance_ends:
            if end.instance_id not in ended:
                raise BatchMiss("stale", _moved_on(end))
        raise BatchMiss("conflict", f"a guarded write missed: {report}")


MISS_SQLSTATE = "BPM01"


def _moved_on(end: _InstanceEnd) -> str:
    return (
        f"instance {end.instance_id} is no longer {' or '.join(end.only_from)}: it "
        f"changed while this transaction decided to make it {end.state}"
    )


def _serialise_variable_writers(conn: Connection, instance_ids: list[UUID]) -> None:
    """Branches of one instance that set variables take turns (instance row lock) before their
    history ids are drawn, so the order of the ``VariablesChanged`` rows is the order the
    writes were committed in, and history alone tells which write came last."""
    conn.exec_driver_sql(
        "SELECT 1 FROM process_instances WHERE id = ANY(%(ids)s) ORDER BY id FOR NO KEY UPDATE",
        {"ids": instance_ids},
    )


def _json(rows: list[dict[str, Any]]) -> str:
    """Rows as one JSON array: encoding it is far cheaper than binding a parameter a column.

    orjson does it about fifteen times faster than the standard library (encoding was a tenth
    of a step's CPU); a value it refuses (an integer beyond 64 bits, a non-string key) goes
    the slow way. Variables reach this checked (no NaN or Infinity, JSON types only); the
    engine's own history data is plain JSON as well.
    """
    try:
        return orjson.dumps(rows).decode()
    except orjson.JSONEncodeError:
        return json.dumps(rows, default=_scalar, separators=(",", ":"))


def _scalar(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to the database")


#: The columns of external_tasks a new task row is built from, straight from the table's type.
#: A new task is never locked, so the credential of a lock is left to its default (NULL): only
#: a fetch or a lock sets it, and the statement stays within psycopg's parse cache.
_TASK_COLUMNS = tuple(c.name for c in external_tasks.c if c.name != "lock_credential")
_TOKEN = (
    ("id", "uuid"),
    ("expected", "int"),
    ("state", "text"),
    ("node_id", "text"),
    ("via_flow", "text"),
    ("wait_kind", "text"),
    ("waits_for", "int"),
    ("version", "int"),
    ("updated_at", "timestamptz"),
)


def _rows_of(param: str, table: str) -> str:
    """Rows shaped like ``table``'s (its column names and types) from a JSON array."""
    return f"jsonb_populate_recordset(NULL::{table}, %({param})s::jsonb) AS u"


def _as_task_row(params: dict[str, Any]) -> dict[str, Any]:
    """A guarded task change (``tasks.finish_params``) under the table's column names."""
    row = {k: v for k, v in params.items() if k not in ("b_id", "b_version", "now")}
    return {
        **row,
        "id": params["b_id"],
        "version": params["b_version"],
        "updated_at": params["now"],
    }


def _recordset(param: str, columns: tuple[tuple[str, str], ...]) -> str:
    spec = ", ".join(f"{name} {kind}" for name, kind in columns)
    return f"jsonb_to_recordset(%({param})s::jsonb) AS u({spec})"


_END = (
    ("id", "uuid"),
    ("state", "text"),
    ("now", "timestamptz"),
    ("ended_at", "timestamptz"),
    ("only_from", "jsonb"),
    ("k", "int"),
)
#: Makes an update wait for the instance row locks of ``ie`` before it locks its own rows.
_AFTER_IE = "AND (SELECT count(*) FROM ie) >= 0"
_HISTORY = (
    ("k", "int"),
    ("tbl", "text"),
    ("instance_id", "uuid"),
    ("at", "timestamptz"),
    ("type", "text"),
    ("node_id", "text"),
    ("from_state", "text"),
    ("to_state", "text"),
    ("actor", "text"),
    ("data", "jsonb"),
    ("token_id", "uuid"),
    ("task_id", "uuid"),
    ("cause", "text"),
)


#: The parts a write statement can have; each batch sends only those it needs (a CTE over an
#: empty array still costs the server its executor set-up), see ``_flush_sql``.
PARTS = frozenset({"ie", "tu", "ti", "vu", "ku", "notify", "read", *TABLES})


@cache
def _flush_sql(parts: frozenset[str]) -> str:
    """The write statement for a batch with these parts (``PARTS``)."""
    # Kept terse: the whole statement must stay within psycopg's cached-query length.
    sets = ",".join(
        f"{c}=u.{c}"
        for c in (
            "state",
            "retry_at",
            "lock_owner",
            "lock_expire_at",
            "error_message",
            "error_details",
            "retries",
            "attempts",
        )
    )
    after_ie = _AFTER_IE if "ie" in parts else ""
    history = [name for name in TABLES if name in parts]
    ctes = []
    if history:
        ctes.append("base AS (SELECT nextval('bpm_history_seq') AS b)")
    if "ie" in parts:
        # Instance state changes lock the instance row first, as set_instance_state does
        # before any token or task row, so this statement takes locks in the engine's order.
        ctes.append(
            f"ie AS (UPDATE process_instances p SET state = u.state, version = p.version + 1, "
            f"updated_at = u.now, ended_at = u.ended_at FROM {_recordset('ie', _END)}, LATERAL "
            f"(SELECT o.state FROM process_instances o WHERE o.id = u.id FOR NO KEY UPDATE) old "
            f"WHERE p.id = u.id AND u.only_from ? old.state AND old.state <> u.state "
            f"RETURNING p.id, old.state AS old_state, u.k)"
        )
    if history:
        ctes.append(f"h AS MATERIALIZED (SELECT * FROM {_recordset('h', _HISTORY)})")
    if "tu" in parts:
        ctes.append(
            f"tu AS (UPDATE external_tasks t SET {sets}, version = t.version + 1, "
            f"updated_at = u.updated_at FROM {_rows_of('tu', 'external_tasks')} "
            f"WHERE t.id = u.id AND t.version = u.version "
            f"AND t.id = ANY(%(tui)s::uuid[]) {after_ie} RETURNING t.id)"
        )
    if "ti" in parts:
        # Named columns: a column a later migration adds gets its default, not NULL. The
        # lists have no spaces: the statement stays short enough for psycopg's parse cache.
        ctes.append(
            f"ti AS (INSERT INTO external_tasks ({','.join(_TASK_COLUMNS)}) SELECT "
            f"{','.join(_TASK_COLUMNS)} FROM {_rows_of('ti', 'external_tasks')})"
        )
    if "vu" in parts:
        ctes.append(
            f"vu AS (INSERT INTO variables (instance_id, name, value, version, updated_at) "
            # a JSON null value reads back from the recordset as SQL NULL: it is JSON's null
            f"SELECT u.instance_id, u.name, COALESCE(u.value,'null'), 1, u.updated_at "
            f"FROM {_rows_of('vu', 'variables')} "
            f"ON CONFLICT (instance_id, name) DO UPDATE SET value = excluded.value, "
            f"version = variables.version + 1, updated_at = excluded.updated_at)"
        )
    if "ku" in parts:
        ctes.append(
            f"ku AS (UPDATE tokens k SET state = u.state, node_id = u.node_id, "
            f"via_flow = u.via_flow, wait_kind = u.wait_kind, waits_for = u.waits_for, "
            f"version = u.version, "
            f"updated_at = u.updated_at FROM {_recordset('ku', _TOKEN)} "
            f"WHERE k.id = u.id AND k.version = u.expected "
            f"AND k.id = ANY(%(kui)s::uuid[]) {after_ie} RETURNING k.id)"
        )
    for i, name in enumerate(history):
        columns = [c for c in (*COMMON_COLUMNS, *EXTRA_COLUMNS[name]) if c != "k"]
        values = [
            c
            if (c, name) != ("from_state", "engine") or "ie" not in parts
            else "COALESCE(from_state, (SELECT ie.old_state FROM ie WHERE ie.k = h.k))"
            for c in columns
        ]
        ctes.append(
            f"h_{i} AS (INSERT INTO {TABLES[name].name} (id,{','.join(columns)}) "
            f"SELECT base.b + h.k,{','.join(values)} "
            f"FROM base, h WHERE h.tbl = '{name}')"
        )
    if "notify" in parts:
        ctes.append(
            "n AS (SELECT pg_notify('" + tasks.NOTIFY_CHANNEL + "', topic) "
            "FROM unnest(%(notify)s::text[]) AS topic)"
        )
    # A guarded update that missed fails the whole statement (see bpm_guard_miss); otherwise
    # the statement returns the read-back variables (as they were before it wrote).
    guarded = [(g, f"%(n{g})s") for g in ("tu", "ku", "ie") if g in parts]
    guard = (
        "NULL"
        if not guarded
        else (
            "CASE WHEN "
            + " OR ".join(f"(SELECT count(*) FROM {g}) <> {n}" for g, n in guarded)
            + " THEN bpm_guard_miss(json_build_object("
            + ", ".join(f"'{g}', (SELECT array_agg(id) FROM {g})" for g, _ in guarded)
            + ")::text) END"
        )
    )
    read = (
        (
            "(SELECT jsonb_object_agg(v.name, v.value) FROM variables v "
            "WHERE v.instance_id = %(ri)s::uuid)"
        )
        if "read" in parts
        else "NULL"
    )
    notified = "(SELECT count(*) FROM n)" if "notify" in parts else "0"
    left = (
        "(SELECT jsonb_object_agg(ie.k::text, ie.old_state) FROM ie)" if "ie" in parts else "NULL"
    )
    return (
        "WITH " + ", ".join(ctes) + " " if ctes else ""
    ) + f"SELECT {read}, {guard}, {notified}, {left}"


#: The statement with every part: the longest one.
_FLUSH = _flush_sql(PARTS)
