"""What one engine transaction carries, and the signals a step returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from bpm.definitions.model import ProcessGraph
from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER, Job
from bpm.states import LIVE_TOKEN, EngineEvent
from bpm.store import Connection, instances, new_tokens, tasks, timers, tokens, variables
from bpm.store.batch import BatchMiss, WriteBatch
from bpm.store.history import HistoryBuffer
from bpm.store.rows import InstanceRow, TaskRow, TimerRow, TokenRow


class Stale(Exception):
    """The row moved on since the job was sent: roll back and end as a logged no-op."""


class Conflict(Exception):
    """A version check failed inside a decision; the whole transaction is retried."""


class StartTaken(Stale):
    """A start's row, written with its batch (``Tx.insert_instance``), found its start key
    taken by another start meanwhile: nothing was written; that start's instance stands."""


@dataclass(frozen=True)
class NextToken:
    """Go on advancing this token in the same job (synchronous continuation).

    ``row`` is set when the token was moved by the current transaction: the transaction may
    then go on with it without re-reading (it holds the row's newest version).
    """

    token_id: UUID
    version: int
    row: TokenRow | None = None
    #: The token as this transaction made or read it, for the job's next transaction to begin
    #: from instead of reading it again; never used to go on in this transaction (only the
    #: token a step moved does, ``row``). Safe across the commit: every write of a token is
    #: checked against its version, so a row moved meanwhile makes that write a conflict,
    #: tried again from a fresh read.
    seen: TokenRow | None = None


@dataclass(frozen=True)
class RunTask:
    """A handler task was created: run it now if this process can, else send it.

    ``locked`` is set when the creating transaction already locked the task for this runner
    (the attempt counts from there), with the variables the handler gets in ``values``.
    """

    task_id: UUID
    locked: TaskRow | None = None
    values: dict[str, Any] | None = None
    token: TokenRow | None = None


Next = NextToken | RunTask | None


@dataclass
class Tx:
    """One transaction: its connection, its ``now``, its history and its after-commit jobs."""

    conn: Connection
    now: datetime
    actor: str
    batch: WriteBatch = field(default_factory=WriteBatch)
    #: Topics that got new READY tasks: long-polling workers are woken at commit.
    notify_topics: set[str] = field(default_factory=set)
    jobs: list[Job] = field(default_factory=list)
    #: Whether this process runs a handler itself right after commit (then the task is
    #: created already locked by ``actor``, saving a transaction per step).
    runs_inline: Callable[[str], bool] = field(default=lambda _name: False)
    #: The compiled graph of an instance's definition (set by the engine).
    graph_for: Callable[[UUID], ProcessGraph] | None = None
    #: The compiled graph of a definition, by its id (set by the engine).
    graph_of_definition: Callable[[UUID], ProcessGraph] | None = None
    #: The calling instance and its token there, for an instance a call activity started
    #: (set by the engine; cached, since it never changes).
    caller_of: Callable[[UUID], tuple[UUID, UUID] | None] | None = None
    #: What led to this transaction (a job, scan, API call or operator action): every history
    #: row it writes carries it.
    cause: str | None = None
    #: Scopes (token id, node id) this transaction gave local variables: they end when the
    #: token leaves, even at a node without input mappings.
    local_scopes: set[tuple[UUID, str]] = field(default_factory=set)
    #: Tokens whose conditional subscriptions began in this transaction and were evaluated
    #: then: the variable changes this transaction made came before them, so
    #: ``semantics/condition_changes`` leaves them out.
    conditions_seen: set[UUID] = field(default_factory=set)
    #: Per instance (by ``UUID.int``: hashing a UUID is a Python call, an int's is not):
    #: whether its definition declares mappings, asked on every token move.
    _mapped: dict[int, bool] = field(default_factory=dict)
    #: Per instance, as ``_mapped``: whether its definition has conditional events.
    _conditional: dict[int, bool] = field(default_factory=dict)

    def may_have_locals(self, instance_id: UUID) -> bool:
        """Whether a token of this instance can hold local variables: this transaction made
        some, or the instance's definition declares mappings."""
        if self.local_scopes:
            return True
        mapped = self._mapped.get(instance_id.int)
        if mapped is None:
            graph = self.graph_for(instance_id) if self.graph_for is not None else None
            mapped = self.know_graph(instance_id, graph) if graph is not None else False
        return mapped

    def know_graph(self, instance_id: UUID, graph: ProcessGraph) -> bool:
        """Note what the caller already knows about an instance's definition."""
        self._conditional[instance_id.int] = graph.has_conditions
        mapped = self._mapped[instance_id.int] = graph.has_mappings
        return mapped

    def may_have_conditions(self, instance_id: UUID) -> bool:
        """Whether the instance's definition has conditional events (its variable changes
        are then evaluated before the flush: ``semantics/condition_changes``)."""
        known = self._conditional.get(instance_id.int)
        if known is None:
            graph = self.graph_for(instance_id) if self.graph_for is not None else None
            known = graph is not None and graph.has_conditions
            self._conditional[instance_id.int] = known
        return known

    #: Instances whose row this transaction has locked (see ``lock_instance``).
    instance_locks: set[UUID] = field(default_factory=set)
    #: Tokens this transaction created and sent to be advanced by jobs of their own (a
    #: fork's branches after the first, a parallel multi-instance body's other iterations),
    #: with those jobs: a runner whose jobs would run on its own thread anyway may take them
    #: on in this transaction instead (``JobRunner``).
    branches: list[tuple[TokenRow, Job]] = field(default_factory=list)
    #: Handler tasks this runner runs are created reserved rather than locked (their attempt
    #: counts when their run begins): set while a runner takes on branches.
    reserving: bool = False
    #: Tasks this transaction changed (completed, failed, cancelled, ...).
    changed_tasks: set[UUID] = field(default_factory=set)

    @property
    def history(self) -> HistoryBuffer:
        return self.batch.history

    def stage_token(self, before: TokenRow, after: TokenRow) -> None:
        """Record a token move; it is written (version-checked) when the transaction flushes."""
        held = self.batch.token_moves.get(before.id)
        if held is not None and held[1].version != before.version:
            raise Conflict(f"token {before.id} was moved twice from version {before.version}")
        self.batch.token_moves[before.id] = ((held[0] if held else before.version), after)

    def current(self, tok: TokenRow) -> TokenRow:
        """The newest row of ``tok`` as this transaction has moved it so far."""
        held = self.batch.token_moves.get(tok.id)
        return held[1] if held is not None else tok

    # Token reads. The moves this transaction staged are written only when it flushes (after
    # the instance row, if it locks that: see ``lock_instance``), so every read of tokens
    # goes through these, which lay the staged rows over what the database has: a read sees
    # this transaction's own moves without writing them first.

    def token(self, token_id: UUID) -> TokenRow | None:
        """A token as this transaction leaves it so far."""
        row = tokens.get(self.conn, token_id)
        return self.current(row) if row is not None else None

    def tokens_of(self, instance_id: UUID) -> list[TokenRow]:
        """Every token of the instance (oldest first) as this transaction leaves it so far."""
        return [self.current(row) for row in tokens.of_instance(self.conn, instance_id)]

    def live_children(self, parent_id: UUID) -> list[TokenRow]:
        """The live children of a token (oldest first) as this transaction leaves them so
        far: a child it ended is left out, one it moved is as moved."""
        return self._as_left(parent_id, tokens.live_children(self.conn, parent_id))

    def _as_left(self, parent_id: UUID, read: list[TokenRow]) -> list[TokenRow]:
        found = {row.id: self.current(row) for row in read}
        for _, row in self.batch.token_moves.values():
            if row.parent_token_id == parent_id:
                found.setdefault(row.id, row)
        rows = sorted(found.values(), key=lambda row: (row.created_at, row.id))
        return [row for row in rows if row.state in LIVE_TOKEN]

    # Row locks. The engine's lock order is instance first: a transaction that locks an
    # instance's row (to change its state, to resolve an incident, to decide for a scope, to
    # change a row it did not create) locks it before any other row of the instance. Token
    # moves and task changes wait in the write batch until the flush, which comes last; the
    # rows written as the transaction goes (timers, incidents, records, local variables)
    # and the rows locked to decide (a scope's token, a timer to fire) are written or locked
    # through these, or after ``lock_instance``. Two transactions that both lock an instance
    # therefore queue at its row, and neither holds a row the other waits for.

    def lock_instance(self, instance_id: UUID) -> None:
        """Lock the instance's row for the rest of the transaction, once (later calls cost
        nothing). On SQLite writers take turns at the database: no statement is needed."""
        if instance_id not in self.instance_locks:
            if self.conn.dialect.name == "postgresql":
                instances.get(self.conn, instance_id, for_update=True)
            self.note_locked(instance_id)

    def locked_instance(self, instance_id: UUID) -> InstanceRow | None:
        """The instance's row, locked for the rest of the transaction: one statement."""
        locking = instance_id not in self.instance_locks
        row = instances.get(self.conn, instance_id, for_update=locking)
        self.note_locked(instance_id)
        return row

    def lock_token(self, tok: TokenRow) -> TokenRow | None:
        """The token's row, locked to decide about it (a scope's children, a saga's next
        step), its instance's row first, in the same statement; as this transaction leaves
        it so far."""
        return self.lock_token_id(tok.id, tok.instance_id)

    def lock_token_id(self, token_id: UUID, instance_id: UUID) -> TokenRow | None:
        """``lock_token`` for a token known by its id and its instance's."""
        row = tokens.lock(self.conn, token_id, instance_id)
        self.note_locked(instance_id)
        return self.current(row) if row is not None else None

    def lock_token_with_children(
        self, token_id: UUID, instance_id: UUID
    ) -> tuple[TokenRow | None, list[TokenRow]]:
        """``lock_token_id``, then the token's ``live_children`` read once it is locked (a
        scope deciding about its branches needs them together)."""
        row, children = tokens.lock_with_children(self.conn, token_id, instance_id)
        self.note_locked(instance_id)
        if row is None:
            return None, []
        return self.current(row), self._as_left(token_id, children)

    def lock_timer(self, timer_id: UUID) -> TimerRow | None:
        """The timer's row, locked to fire it, its instance's row first, in the same
        statement; None when another transaction holds the timer (it is firing it)."""
        row = timers.lock(self.conn, timer_id)
        if row is not None:
            self.note_locked(row.instance_id)
        return row

    def scheduled_timers(self, tok: TokenRow) -> list[TimerRow]:
        """The token's SCHEDULED timers, for the caller to cancel: the statement locks the
        instance's row first."""
        found = timers.scheduled_of_token(self.conn, tok.id, lock_instance=tok.instance_id)
        self.note_locked(tok.instance_id)
        return found

    def note_locked(self, instance_id: UUID) -> None:
        """Note that a statement of this transaction locked the instance's row."""
        self.instance_locks.add(instance_id)
        self.batch.locked_instances.add(instance_id)

    def finish_task(self, task: TaskRow, *, miss: str, message: str, **change: Any) -> None:
        """A version-checked task change; at flush a miss raises ``Stale`` or ``Conflict``."""
        self.changed_tasks.add(task.id)
        self.batch.change_task(tasks.finish_params(task, now=self.now, **change), miss, message)

    def insert_instance(self, row: InstanceRow) -> None:
        """PostgreSQL: a started instance's row, written with the flush (or before this
        transaction's next statement); a key taken meanwhile raises ``StartTaken``."""
        self.batch.insert_instance(self.conn, row)

    def insert_tokens(
        self, rows: list[TokenRow], links: Sequence[tuple[UUID, UUID, str]] = ()
    ) -> None:
        """New tokens and links (parent, child, kind). On PostgreSQL they are written with
        the flush, or before this transaction's next statement (``WriteBatch.insert_tokens``);
        on SQLite at once."""
        if self.conn.dialect.name == "postgresql":
            self.batch.insert_tokens(self.conn, rows, list(links))
        elif rows:
            new_tokens.insert(self.conn, rows, links)
        else:
            new_tokens.link(self.conn, links)

    def insert_task(self, task: TaskRow) -> None:
        self.batch.task_inserts.append(task)

    def write_variables(self, instance_id: UUID, values: dict[str, Any]) -> None:
        """Set variables; a ``VariablesChanged`` history row carries the new values (the old
        ones are in the rows before it), so history alone rebuilds them."""
        if values:
            self.batch.values.setdefault(instance_id, {}).update(values)
            self.history.engine(
                instance_id=instance_id,
                at=self.now,
                type=EngineEvent.VARIABLES_CHANGED,
                actor=self.actor,
                data={"values": values},
            )

    def load_variables(self, instance_id: UUID) -> dict[str, Any]:
        """The instance's variables as this transaction will leave them."""
        return {**variables.load(self.conn, instance_id), **self.batch.values.get(instance_id, {})}

    def variables_at_commit(self, instance_id: UUID) -> dict[str, Any]:
        """The instance's variables as this transaction leaves them, in a dict that is filled
        when it flushes: the write statement reads them back, saving a round trip."""
        if self.batch.read_back is not None and self.batch.read_back[0] != instance_id:
            return self.load_variables(instance_id)
        if self.batch.read_back is None:
            self.batch.read_back = (instance_id, {})
        return self.batch.read_back[1]

    def flush(self) -> None:
        """Write everything this transaction decided, in one go."""
        for _, row in self.history.rows:
            row["cause"] = self.cause
        if self.batch.begin is not None:
            self.batch.begin.row["cause"] = self.cause
        self.batch.now = self.now
        self.batch.notify = self.notify_topics
        try:
            self.batch.flush(self.conn)
        except BatchMiss as exc:
            kinds = {"stale": Stale, "taken": StartTaken}
            raise kinds.get(exc.kind, Conflict)(exc.message) from exc

    def advance_later(self, token_id: UUID, version: int) -> None:
        self.jobs.append(
            Job(ADVANCE_TOKEN, {"token_id": str(token_id), "expected_version": version})
        )

    def branch_later(self, tok: TokenRow) -> None:
        """Advance ``tok``, a token this transaction created, in a job of its own."""
        self.advance_later(tok.id, tok.version)
        self.branches.append((tok, self.jobs[-1]))

    def run_handler_later(self, task_id: UUID, not_before: datetime | None = None) -> None:
        self.jobs.append(Job(RUN_HANDLER, {"task_id": str(task_id)}, not_before))
