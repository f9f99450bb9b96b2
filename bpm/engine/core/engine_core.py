"""The engine's core: the parts every operation and job shares, and its transactions.

It holds the database, the dispatcher, the clock, the handler registry and the caches of what
never changes (compiled graphs, definition versions, who an instance is). Operations and the
job runner use it; node semantics never see it, only the transaction it opens.
"""

from __future__ import annotations

import os
import random
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TypedDict, TypeVar
from uuid import UUID

from bpm.beans import BeanRegistry
from bpm.beans import beans as default_beans
from bpm.clock import SYSTEM_CLOCK, Clock
from bpm.definitions.code import BUILT_IN
from bpm.definitions.model import ProcessGraph
from bpm.definitions.parse.document import compile_definition
from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER, Dispatcher, InProcessDispatcher, Job
from bpm.engine.core.causes import current_actor, current_cause
from bpm.engine.core.held import HeldTasks
from bpm.engine.core.instance_moves import InstanceMove, instance_moves
from bpm.engine.core.tx import Conflict, Next, NextToken, RunTask, Tx
from bpm.engine.semantics import condition_changes
from bpm.errors import NotFound
from bpm.events import EventListeners
from bpm.events import listeners as default_listeners
from bpm.handlers import HandlerRegistry
from bpm.handlers import registry as default_registry
from bpm.juel_values import evaluated_at
from bpm.observe import NO_OBSERVER, ConflictKind, Observer
from bpm.store import Connection, Database, RetryableDatabaseError, definitions, instances
from bpm.store.rows import InstanceRow

T = TypeVar("T")

#: How many instances' fixed facts a long-running worker keeps; it meets ever new ones.
INSTANCE_CACHE = 10_000


def _never(_handler: str) -> bool:
    return False


class CoreOptions(TypedDict, total=False):
    """How an engine is set up, beyond its database and dispatcher."""

    handlers: HandlerRegistry | None
    clock: Clock
    worker_id: str | None
    run_handlers_inline: bool
    listeners: EventListeners | None
    beans: BeanRegistry | None
    #: Told of steps, handler runs, conflicts and instance starts and ends (``bpm.observe``).
    observer: Observer


class InstanceInfo:
    """What never changes about an instance, cached to save a query per job."""

    __slots__ = ("business_key", "caller", "def_id", "key", "started_at")

    def __init__(
        self,
        def_id: UUID,
        key: str,
        business_key: str | None,
        caller: tuple[UUID, UUID] | None = None,
        started_at: datetime | None = None,
    ) -> None:
        self.def_id, self.key, self.business_key = def_id, key, business_key
        #: For an instance a call activity started: the calling instance and its token.
        self.caller = caller
        #: When it started, if known here (an instance's duration, for the observer).
        self.started_at = started_at


class EngineCore:
    """Runs process instances stored in ``db``; hands follow-up work to ``dispatcher``."""

    def __init__(
        self,
        db: Database,
        dispatcher: Dispatcher,
        *,
        handlers: HandlerRegistry | None = None,
        clock: Clock = SYSTEM_CLOCK,
        worker_id: str | None = None,
        run_handlers_inline: bool = True,
        listeners: EventListeners | None = None,
        beans: BeanRegistry | None = None,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        self.db = db
        self.observer = observer
        self.beans = beans if beans is not None else default_beans
        self.dispatcher = dispatcher
        self.handlers = handlers if handlers is not None else default_registry
        self.clock = clock
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        self.run_handlers_inline = run_handlers_inline
        #: Jobs dispatched in process run on the thread that pops them, one after another:
        #: a fork's other branches gain nothing from a job of their own, and a run that
        #: forks takes them on (``JobRunner``). Through a broker they are jobs any worker
        #: can take, so branches run in parallel.
        self.branches_here = run_handlers_inline and isinstance(dispatcher, InProcessDispatcher)
        self.listeners = listeners if listeners is not None else default_listeners
        self._graphs: dict[UUID, ProcessGraph] = {}
        self._versions: dict[UUID, int] = {}
        self._instances: OrderedDict[UUID, InstanceInfo] = OrderedDict()
        #: Tasks this engine's fetches locked, with their tokens, for their completes.
        self.held = HeldTasks()

    # --- transactions --------------------------------------------------------------------

    @contextmanager
    def transaction(self, actor: str | None = None, *, inline: bool = False) -> Iterator[Tx]:
        """One transaction; its history is flushed before commit, its jobs sent after."""
        with self.db.transaction() as conn:
            tx = Tx(
                conn,
                self.clock.now(),
                current_actor() or actor or self.worker_id,
                runs_inline=self.runs_inline if inline else _never,
            )
            tx.graph_for = lambda iid: self.graph(self.info(tx, iid).def_id, tx.conn)
            tx.graph_of_definition = lambda def_id: self.graph(def_id, tx.conn)
            tx.caller_of = lambda iid: self.info(tx, iid).caller
            tx.cause = current_cause()
            with evaluated_at(tx.now):  # dateTime() in expressions: the transaction's time
                yield tx
                condition_changes.settle(tx)  # the one hook after variable writes
            moves = (
                instance_moves(tx, lambda iid: self._key_and_start(tx, iid))
                if self.observer.enabled
                else None
            )
            wanted = [
                row
                for table, row in tx.history.rows
                if table == "engine" and self.listeners.wants(row["type"])
            ]
            tx.flush()  # may fill in rows (an instance's from_state)
            events = [dict(row) for row in wanted]
        if tx.jobs:
            self.dispatcher.dispatch(tx.jobs)
        if events:
            self.listeners.emit(events)
        if moves:
            self._tell(moves)

    def _tell(self, moves: list[InstanceMove]) -> None:
        for move in moves:
            move.tell(self.observer)

    def _key_and_start(self, tx: Tx, instance_id: UUID) -> tuple[str, datetime | None]:
        """For the observer: a measurement never fails the transaction it measures."""
        try:
            info = self.info(tx, instance_id)
        except NotFound:
            return "", None
        if info.started_at is None:  # known only by a fetch's facts: read it once
            row = instances.get(tx.conn, instance_id)
            info.started_at = row.started_at if row is not None else None
        return info.key, info.started_at

    def retrying(
        self, fn: Callable[[], T], attempts: int = 5, also: tuple[type[Exception], ...] = ()
    ) -> T:
        """Retry a transaction that lost a version race, with jitter (never an incident);
        ``also``: further errors that a fresh read may clear up."""
        retried: tuple[type[Exception], ...] = (Conflict, RetryableDatabaseError, *also)
        for attempt in range(attempts):
            try:
                return fn()
            except retried as exc:
                if attempt == attempts - 1:
                    raise
                if self.observer.enabled:
                    self.observer.conflict(
                        ConflictKind.VERSION if isinstance(exc, Conflict) else ConflictKind.DATABASE
                    )
                time.sleep(random.uniform(0.001, 0.005 * (attempt + 1)))
        raise AssertionError("unreachable")

    def runs_inline(self, handler: str) -> bool:
        """Whether this process runs ``handler`` itself right after the commit that made its
        task (then the task is created already locked)."""
        return self.run_handlers_inline and (handler in self.handlers or handler in BUILT_IN)

    def send_next(self, nxt: Next) -> None:
        """Queue what comes after a commit: the rest of a chain, or an external worker's
        next step, so other work gets its turn."""
        if isinstance(nxt, NextToken):
            args = {"token_id": str(nxt.token_id), "expected_version": nxt.version}
            self.dispatcher.dispatch([Job(ADVANCE_TOKEN, args)])
        elif isinstance(nxt, RunTask):
            self.dispatcher.dispatch([Job(RUN_HANDLER, {"task_id": str(nxt.task_id)})])

    # --- definitions & instance info ---------------------------------------------------

    def graph(self, def_id: UUID, conn: Connection | None = None) -> ProcessGraph:
        """The compiled graph of a definition; definitions are immutable, so it is cached.

        Pass the caller's connection when inside a transaction: a second connection could
        wait on the first one's lock (SQLite).
        """
        graph = self._graphs.get(def_id)
        if graph is None:
            if conn is None:
                with self.db.transaction() as own:
                    row = definitions.by_id(own, def_id)
            else:
                row = definitions.by_id(conn, def_id)
            if row is None:
                raise NotFound(f"definition {def_id} does not exist")
            graph = compile_definition(row.graph)
            self._graphs[def_id] = graph
        return graph

    def graph_of(self, tx: Tx, instance_id: UUID) -> ProcessGraph:
        """The compiled graph an instance runs."""
        graph = self.graph(self.info(tx, instance_id).def_id, tx.conn)
        tx.know_graph(instance_id, graph)
        return graph

    def definition_version(self, def_id: UUID, conn: Connection) -> int:
        """A definition's version number (immutable, so cached)."""
        version = self._versions.get(def_id)
        if version is None:
            row = definitions.by_id(conn, def_id)
            if row is None:
                raise NotFound(f"definition {def_id} does not exist")
            version = self._versions[def_id] = row.version
        return version

    def info(self, tx: Tx, instance_id: UUID) -> InstanceInfo:
        info = self._instances.get(instance_id)
        if info is None:
            inst = instances.get(tx.conn, instance_id)
            if inst is None:
                raise NotFound(f"instance {instance_id} does not exist")
            self.remember_row(inst)
            info = self._instances[instance_id]
        return info

    def cached_info(self, instance_id: UUID) -> InstanceInfo | None:
        return self._instances.get(instance_id)

    def info_for(self, tx: Tx, instance_id: UUID) -> tuple[UUID, str, str | None]:
        info = self.info(tx, instance_id)
        return info.def_id, info.key, info.business_key

    def know_instances(self, tx: Tx, instance_ids: list[UUID]) -> None:
        """Cache what never changes about these instances, in one query for all."""
        missing = [iid for iid in set(instance_ids) if iid not in self._instances]
        for inst in instances.get_many(tx.conn, missing):
            self.remember_row(inst)

    def remember_row(self, inst: InstanceRow) -> None:
        caller = (
            (inst.super_instance_id, inst.super_token_id)
            if inst.super_instance_id is not None and inst.super_token_id is not None
            else None
        )
        key, started = inst.process_key, inst.started_at
        self.remember(inst.id, inst.process_def_id, key, inst.business_key, caller, started)

    def remember(
        self,
        instance_id: UUID,
        def_id: UUID,
        key: str,
        business_key: str | None,
        caller: tuple[UUID, UUID] | None = None,
        started_at: datetime | None = None,
    ) -> None:
        self._instances[instance_id] = InstanceInfo(def_id, key, business_key, caller, started_at)
        self._instances.move_to_end(instance_id)
        while len(self._instances) > INSTANCE_CACHE:
            self._instances.popitem(last=False)
