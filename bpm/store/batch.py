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
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NoReturn
from uuid import UUID

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from bpm.store import instances, tasks, tokens, variables
from bpm.store.batch_sql import BEGUN_ROW, TASK_COLUMNS, flush_sql, task_row
from bpm.store.db import defer_write, first_statement_commits, raw_one, take_deferred, uuid_array
from bpm.store.history import HistoryBuffer
from bpm.store.json_rows import encode_rows
from bpm.store.new_rows import NewRows
from bpm.store.rows import InstanceRow, TaskRow, TokenRow
from bpm.store.schema import HISTORY_BLOCK


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
class ReservedBegin:
    """A reserved task's run, begun by the write statement if the task is still as reserved
    (``tasks.begin_reserved``): ``begun`` is known once the batch is flushed."""

    params: dict[str, Any]
    row: dict[str, Any]
    #: Where its history row goes among the transaction's: where it was begun.
    at: int
    begun: bool | None = None


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
    #: A reserved task whose run this batch begins (``begin_reserved``).
    begin: ReservedBegin | None = None
    now: Any = None
    #: New instances, tokens and links (PostgreSQL): written by the batch's statement, or
    #: before the transaction's next statement if another comes first.
    new: NewRows = field(default_factory=NewRows)

    def insert_instance(self, conn: Connection, row: InstanceRow) -> None:
        """PostgreSQL: write a started instance's row with the batch, as ``insert_tokens``
        its tokens. If another start took its key (``idempotency_key``) meanwhile, the
        statement that writes it fails as a whole, with nothing written: ``BatchMiss``
        ``taken`` at the flush, ``start_taken`` for a statement sent before it."""
        self.new.instances.append(row)
        defer_write(conn, self.new.sent_alone)

    def insert_tokens(
        self, conn: Connection, rows: list[TokenRow], links: list[tuple[UUID, UUID, str]]
    ) -> None:
        """PostgreSQL: write new tokens and links (parent, child, kind) with the batch, so a
        fork's step costs one statement; a statement sent before then writes them first
        (``db.defer_write``), so every read and lock finds them. A move of a token still
        to be written becomes its row (``NewRows.fold_moves``)."""
        if rows or links:
            self.new.tokens.extend(rows)
            self.new.links.extend(links)
            defer_write(conn, self.new.sent_alone)

    def _fold_ends(self) -> None:
        """An instance this batch inserts and ends (its first path reached an end at once)
        is inserted ended: the statement's update of its state would not see the new row."""
        at = {row.id: i for i, row in enumerate(self.new.instances)}
        for end in [e for e in self.instance_ends if e.instance_id in at]:
            row = self.new.instances[at[end.instance_id]]
            if row.state not in end.only_from or row.state == end.state:
                raise BatchMiss("stale", _moved_on(end))
            self.new.instances[at[end.instance_id]] = replace(
                row,
                state=end.state,
                version=row.version + 1,
                updated_at=self.now,
                ended_at=end.ended_at,
            )
            end.row["from_state"] = row.state
            self.instance_ends.remove(end)

    def begin_reserved(self, params: dict[str, Any], row: dict[str, Any]) -> ReservedBegin:
        """Begin a reserved task's run with this batch (``tasks.begin_reserved``'s
        ``params``), and write its history ``row`` only if it began: no statement of its own,
        and a task changed meanwhile fails nothing else."""
        self.begin = ReservedBegin(params, row, at=len(self.history.rows))
        return self.begin

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
            + len(self.new)
        )
        if self.begin is not None and self.begin.params["b_id"] in {
            c.params["b_id"] for c in self.task_changes
        }:  # the transaction changed the task itself (cancelled it): its run does not begin
            self.begin.begun, self.begin = False, None
        if rows == 0 and self.read_back is None and not self.notify and self.begin is None:
            return
        begun_row = 1 if self.begin is not None else 0
        if conn.dialect.name == "postgresql" and len(self.history) + begun_row <= HISTORY_BLOCK:
            take_deferred(conn)  # the new rows go in the statement
            self.new.fold_moves(self.token_moves)
            self._fold_ends()
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
        if (write := take_deferred(conn)) is not None:  # new rows first: moves may name them
            self._guarded(conn, *write())
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
        if self.begin is not None:
            begin = self.begin
            begin.begun = tasks.begin_reserved(conn, begin.params) is not None
            if begin.begun:
                self.history.rows.insert(begin.at, ("task", begin.row))
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
            "tu": encode_rows([task_row(c.params) for c in self.task_changes]),
            "ti": encode_rows(
                [{c: getattr(r, c) for c in TASK_COLUMNS} for r in self.task_inserts]
            ),
            "vu": encode_rows(
                [
                    {"instance_id": iid, "name": name, "value": value, "updated_at": self.now}
                    for iid, named in self.values.items()
                    for name, value in named.items()
                ]
            ),
            "ku": encode_rows(
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
            "h": encode_rows(self._history_rows()),
            **self.new.params(),
            "ie": encode_rows(
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
        changed = sorted({c.params["b_id"] for c in self.task_changes})
        params["tui"] = uuid_array(changed)
        params["kui"] = uuid_array(sorted(self.token_moves))
        params["ntu"] = len(changed)
        params["nku"] = len(self.token_moves)
        params["notify"] = sorted(self.notify)
        params["ri"] = read_id
        if self.begin is not None:
            params.update(self.begin.params)
        with first_statement_commits(conn):
            row = self._guarded(conn, flush_sql(self._parts()), params)
        stored, left = row[0], row[3] or {}
        for end in self.instance_ends:
            end.row["from_state"] = left.get(str(self._index(end.row)))
        if self.begin is not None:
            self.begin.begun = bool(row[4])
        if into is not None:
            into.update({**(stored or {}), **own})

    def _guarded(self, conn: Connection, sql: str, params: dict[str, Any]) -> tuple[Any, ...]:
        """Send a statement with guarded writes; a miss is raised as ``BatchMiss``."""
        try:
            row = raw_one(conn, sql, params)
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) != MISS_SQLSTATE:
                raise
            self._raise_miss(json.loads(exc.orig.diag.message_primary or "{}"))  # type: ignore[union-attr]
        assert row is not None
        return row

    def _ordered(self) -> list[tuple[str, dict[str, Any]]]:
        """The history rows in order, a begun run's (under its own name) where it began."""
        rows = list(self.history.rows)
        if self.begin is not None:
            rows.insert(self.begin.at, (BEGUN_ROW, self.begin.row))
        return rows

    def _history_rows(self) -> list[dict[str, Any]]:
        """The rows of ``h``, numbered in order: their ids follow it."""
        return [{"k": k, "tbl": name, **row} for k, (name, row) in enumerate(self._ordered())]

    def _parts(self) -> frozenset[str]:
        present = {
            "ie": self.instance_ends,
            "tu": self.task_changes,
            "ti": self.task_inserts,
            "vu": self.values,
            "ku": self.token_moves,
            "notify": self.notify,
            "read": self.read_back,
            "tb": self.begin,
            **self.new.parts(),
        }
        return frozenset(
            [
                *(p for p, there in present.items() if there),
                *(name for name, _ in self.history.rows),
            ]
        )

    def _index(self, row: dict[str, Any]) -> int:
        return next(k for k, (_, r) in enumerate(self._ordered()) if r is row)

    def _raise_miss(self, report: dict[str, Any]) -> NoReturn:
        """Which guarded write of the statement missed; a part the statement did not carry
        (the new rows sent alone carry only theirs) is not judged."""
        changed = {UUID(x) for x in report.get("tu") or ()}
        moved = {UUID(x) for x in report.get("ku") or ()}
        for change in self.task_changes if "tu" in report else ():
            if change.params["b_id"] not in changed:
                raise BatchMiss(change.miss, change.message)
        for token_id, (expected, _) in self.token_moves.items() if "ku" in report else ():
            if token_id not in moved:
                raise BatchMiss("conflict", f"token {token_id} changed since version {expected}")
        ended = {UUID(x) for x in report.get("ie") or ()}
        for end in self.instance_ends if "ie" in report else ():
            if end.instance_id not in ended:
                raise BatchMiss("stale", _moved_on(end))
        if "i" in report:  # the other guarded writes all held: the start's row missed
            raise BatchMiss("taken", "another start took this start's key first")
        raise BatchMiss("conflict", f"a guarded write missed: {report}")


MISS_SQLSTATE = "BPM01"


def start_taken(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement refused because the instance it began to write (sent
    before the flush, ``insert_instance``) was another start's key."""
    orig = getattr(exc, "orig", None)
    if getattr(orig, "sqlstate", None) != MISS_SQLSTATE:
        return False
    report = json.loads(orig.diag.message_primary or "{}")  # type: ignore[union-attr]
    return "i" in report


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
