"""The engine facade: every use case is one method that owns its transactions.

Jobs (advance a token, run a handler) re-read their rows and act under version checks, so a
job delivered twice, late, or after someone else did the work ends as a logged no-op.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID

from bpm.clock import SYSTEM_CLOCK, Clock
from bpm.definitions.model import ProcessGraph
from bpm.definitions.parse import compile_definition
from bpm.dispatch import ADVANCE_TOKEN, RUN_COMPENSATION, RUN_HANDLER, Dispatcher, Job
from bpm.engine import (
    external,
    handler_runs,
    joins,
    lifecycle,
    messages,
    nodes,
    queries,
    retention,
    sagas,
    scans,
    timers,
    user_tasks,
    views,
)
from bpm.engine.held import HeldTasks
from bpm.engine.tx import Conflict, Next, NextToken, RunTask, Stale, Tx
from bpm.errors import NotFound
from bpm.events import EventListeners
from bpm.events import listeners as default_listeners
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.handlers import registry as default_registry
from bpm.states import TokenState, WaitKind
from bpm.store import (
    Connection,
    Database,
    RetryableDatabaseError,
    definitions,
    instances,
    tokens,
    variables,
)
from bpm.store.notify import Listener, listen
from bpm.store.outages import until_available
from bpm.store.queries import InstanceFilter
from bpm.store.rows import TaskRow, TokenRow

log = logging.getLogger("bpm.engine")
T = TypeVar("T")

DONE, STALE, UNKNOWN, DEFERRED = "done", "stale", "unknown", "deferred"
DEFAULT_LOCK = timedelta(minutes=5)
#: Nodes one transaction may pass for the same token before it commits.
MAX_HOPS_PER_TX = 20


def as_id(value: UUID | str, what: str) -> UUID:
    """Accept ids as UUIDs or strings; a malformed one is a clear error, not a driver error."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise NotFound(f"{what} id {value!r} is not a valid id (expected a UUID)") from None


def _never(_handler: str) -> bool:
    return False


#: What the engine is doing on behalf of whom: set by each entry point (job, API call, scan,
#: operator action) and written into every history row of the transactions it leads to.
_CAUSE: ContextVar[str | None] = ContextVar("bpm_cause", default=None)


@contextmanager
def because(cause: str) -> Iterator[None]:
    """Mark the transactions made inside with ``cause``; an outer cause wins (a job that goes
    on through API-level steps stays that job)."""
    if _CAUSE.get() is not None:
        yield
        return
    token = _CAUSE.set(cause)
    try:
        yield
    finally:
        _CAUSE.reset(token)


def _fmt(args: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in args.items())


class _InstanceInfo:
    """What never changes about an instance, cached to save a query per job."""

    __slots__ = ("business_key", "def_id", "key")

    def __init__(self, def_id: UUID, key: str, business_key: str | None) -> None:
        self.def_id, self.key, self.business_key = def_id, key, business_key


class Engine:
    """Runs process instances stored in ``db``; hands follow-up work to ``dispatcher``."""

    def __init__(
        self,
        db: Database,
        dispatcher: Dispatcher,
        *,
        handlers: HandlerRegistry | None = None,
        clock: Clock = SYSTEM_CLOCK,
        worker_id: str | None = None,
        chain_limit: int = 100,
        run_handlers_inline: bool = True,
        listeners: EventListeners | None = None,
    ) -> None:
        self.db = db
        self.dispatcher = dispatcher
        self.handlers = handlers if handlers is not None else default_registry
        self.clock = clock
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        self.chain_limit = chain_limit
        self.run_handlers_inline = run_handlers_inline
        self.listeners = listeners if listeners is not None else default_listeners
        self._graphs: dict[UUID, ProcessGraph] = {}
        self._versions: dict[UUID, int] = {}
        self._instances: OrderedDict[UUID, _InstanceInfo] = OrderedDict()
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
                actor or self.worker_id,
                runs_inline=self._runs_inline if inline else _never,
            )
            tx.graph_for = lambda iid: self.graph(self._info(tx, iid).def_id, tx.conn)
            tx.cause = _CAUSE.get()
            yield tx
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

    def _retrying(
        self, fn: Callable[[], T], attempts: int = 5, also: tuple[type[Exception], ...] = ()
    ) -> T:
        """Retry a transaction that lost a version race, with jitter (never an incident);
        ``also``: further errors that a fresh read may clear up."""
        retried: tuple[type[Exception], ...] = (Conflict, RetryableDatabaseError, *also)
        for attempt in range(attempts):
            try:
                return fn()
            except retried:
                if attempt == attempts - 1:
                    raise
                time.sleep(random.uniform(0.001, 0.005 * (attempt + 1)))
        raise AssertionError("unreachable")

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

    def definition_version(self, def_id: UUID, conn: Connection) -> int:
        """A definition's version number (immutable, so cached)."""
        version = self._versions.get(def_id)
        if version is None:
            row = definitions.by_id(conn, def_id)
            if row is None:
                raise NotFound(f"definition {def_id} does not exist")
            version = self._versions[def_id] = row.version
        return version

    def _info(self, tx: Tx, instance_id: UUID) -> _InstanceInfo:
        info = self._instances.get(instance_id)
        if info is None:
            inst = instances.get(tx.conn, instance_id)
            if inst is None:
                raise NotFound(f"instance {instance_id} does not exist")
            self.remember(instance_id, inst.process_def_id, inst.process_key, inst.business_key)
            info = self._instances[instance_id]
        return info

    # --- jobs ----------------------------------------------------------------------------

    def run_job(self, job: Job) -> str:
        """Execute one dispatched job by name (what a Celery task or the embedded loop calls)."""
        with because(f"{job.name} {_fmt(job.args)}"):
            if job.name == ADVANCE_TOKEN:
                return self.advance(UUID(job.args["token_id"]), int(job.args["expected_version"]))
            if job.name == RUN_HANDLER:
                return self.run_handler(UUID(job.args["task_id"]))
            if job.name == RUN_COMPENSATION:
                return self.run_compensation(
                    UUID(job.args["token_id"]), int(job.args["expected_version"])
                )
            raise ValueError(f"unknown job {job.name!r}")

    def advance(self, token_id: UUID, expected_version: int) -> str:
        """Apply the node semantics for this token once; a stale version is a no-op."""
        with because(f"bpm.advance_token token={token_id} v={expected_version}"):
            return self._chain(NextToken(token_id, expected_version))

    def run_compensation(self, token_id: UUID, expected_version: int) -> str:
        """Carry out one compensation token (its handler runs as its task); the same version
        rules as ``advance``: a duplicate delivery is a no-op."""
        with because(f"bpm.run_compensation token={token_id} v={expected_version}"):
            return self._chain(NextToken(token_id, expected_version))

    def run_handler(self, task_id: UUID) -> str:
        """Lock the task, run its handler outside any transaction, commit the outcome."""
        with because(f"bpm.run_handler task={task_id}"):
            return self._chain(RunTask(task_id))

    def _chain(self, nxt: Next) -> str:
        """Follow one token through automatic nodes and inline handler runs.

        Every transaction re-reads and version-checks what it changes; the chain only saves the
        broker hop between them. It stops at ``chain_limit`` steps so queues stay fair.
        """
        outcome = DONE
        for step in range(self.chain_limit):
            if nxt is None:
                return outcome
            try:
                # The last step of a chain creates its tasks unlocked, so the job that
                # carries on from it can lock them.
                nxt = self._step(nxt, first=step == 0, inline=step < self.chain_limit - 1)
            except Stale as exc:
                log.info("no-op: %s", exc, extra={"action": "stale"})
                return STALE if step == 0 else outcome
            except NotFound as exc:
                log.warning("dropped: %s", exc, extra={"action": "unknown"})
                return UNKNOWN
        self._defer(nxt)
        return DEFERRED

    def _step(self, nxt: NextToken | RunTask, *, first: bool, inline: bool) -> Next:
        if isinstance(nxt, NextToken):
            return self._retrying(lambda: self._advance_once(nxt, inline))
        if nxt.locked is not None:
            return self._invoke_and_record(nxt.locked, nxt.values or {}, nxt.token, inline)
        if self.run_handlers_inline or first:
            return self._run_handler_once(nxt.task_id, inline)
        self._defer(nxt)
        return None

    def _defer(self, nxt: Next) -> None:
        """Queue the rest of a chain so other work gets its turn."""
        if isinstance(nxt, NextToken):
            self.dispatcher.dispatch(
                [
                    Job(
                        ADVANCE_TOKEN,
                        {"token_id": str(nxt.token_id), "expected_version": nxt.version},
                    )
                ]
            )
        elif isinstance(nxt, RunTask):
            self.dispatcher.dispatch([Job(RUN_HANDLER, {"task_id": str(nxt.task_id)})])

    def _runs_inline(self, handler: str) -> bool:
        return self.run_handlers_inline and handler in self.handlers

    def _advance_once(self, nxt: NextToken, inline: bool) -> Next:
        with self.transaction(inline=inline) as tx:
            tok = tokens.get(tx.conn, nxt.token_id)
            if tok is None:
                raise NotFound(f"token {nxt.token_id} does not exist")
            if tok.version != nxt.version:
                raise Stale(
                    f"token {tok.id} is at version {tok.version}, job expected {nxt.version}"
                )
            g = self.graph(self._info(tx, tok.instance_id).def_id, tx.conn)
            if tok.state == TokenState.ACTIVE:
                result = nodes.arrive(tx, g, tok)
            elif tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.CHILDREN:
                result = joins.decide(tx, g, tok)
            elif tok.state == TokenState.WAITING and tok.wait_kind == sagas.COMPENSATING:
                result = sagas.decide(tx, g, tok)
            else:
                raise Stale(f"token {tok.id} is {tok.state}; nothing to advance")
            return self._continue(tx, g, result)

    def _continue(self, tx: Tx, g: ProcessGraph, result: Next) -> Next:
        """Keep moving the token this transaction already holds, through automatic nodes.

        Only the same token continues (never another one), so a transaction still advances one
        token; each node passage keeps its own history rows.
        """
        for _ in range(MAX_HOPS_PER_TX):
            if not isinstance(result, NextToken) or result.row is None:
                return result
            if result.row.state != TokenState.ACTIVE:
                return result
            result = nodes.arrive(tx, g, result.row)
        return result

    def _run_handler_once(self, task_id: UUID, inline: bool) -> Next:
        with self.transaction() as tx:
            task = handler_runs.lock_task(tx, task_id, DEFAULT_LOCK)
            if task is None:
                raise Stale(
                    f"task {task_id} is not READY and due; another runner has it or it is finished"
                )
            g = self.graph(self._info(tx, task.instance_id).def_id, tx.conn)
            task = handler_runs.fit_lock(tx, task, g.node(task.node_id).timeout)
            values = variables.load(tx.conn, task.instance_id)
        return self._invoke_and_record(task, values, None, inline)

    def _invoke_and_record(
        self, task: TaskRow, values: dict[str, Any], token: TokenRow | None, inline: bool
    ) -> Next:
        """Run the handler with no transaction open, then commit its outcome."""
        info = self._instances.get(task.instance_id)
        if info is None:
            with self.transaction() as tx:
                info = self._info(tx, task.instance_id)
        ctx = HandlerContext(
            values,
            str(task.id),
            task.attempts,
            task.instance_id,
            info.business_key,
            info.key,
            task.node_id,
            task.id,
        )
        started = time.perf_counter()
        outcome = handler_runs.invoke(self.handlers, task, ctx)
        log.debug("handler %s ran in %.1f ms", task.handler, (time.perf_counter() - started) * 1000)
        return self._record(self.graph(info.def_id), task, outcome, token, inline)

    def _record(
        self,
        g: ProcessGraph,
        task: TaskRow,
        outcome: handler_runs.Outcome,
        token: TokenRow | None,
        inline: bool,
    ) -> Next:
        """Commit the outcome. A version race with another row it touches (a sibling branch
        of a subprocess a caught error ends, say) is tried again from fresh reads, the token
        included; if it was the task or its token that moved, that try finds out and drops
        the result."""
        known = [token]

        def once() -> Next:
            tok, known[0] = known[0], None
            with self.transaction(inline=inline) as tx:
                if outcome.variables is not None:
                    result = handler_runs.complete_task(tx, g, task, outcome.variables, tok)
                    return self._continue(tx, g, result)
                return handler_runs.fail_task(tx, g, task, outcome)

        # The result exists only in this process: while the database is unreachable, keep
        # trying for as long as the lock lasts (afterwards the lock scan has offered the task
        # again, and the version check would drop the result anyway).
        held = (
            (task.lock_expire_at - self.clock.now()).total_seconds()
            if task.lock_expire_at is not None
            else 0.0
        )
        try:
            return until_available(
                lambda: self._retrying(once),
                within=max(30.0, held),
                what=f"recording the result of task {task.id}",
            )
        except Conflict as exc:
            raise Stale(f"result of task {task.id} dropped: {exc}") from exc

    # --- used by the facade modules ------------------------------------------------------

    def continue_in(self, tx: Tx, g: ProcessGraph, result: Next) -> Next:
        """Keep moving the token ``tx`` holds through automatic nodes (see ``_continue``)."""
        return self._continue(tx, g, result)

    def carry_on(self, nxt: Next) -> None:
        """After a commit made elsewhere (an external worker's call): send what comes next."""
        if nxt is not None:
            self._defer(nxt)

    def retrying(self, fn: Callable[[], T], also: tuple[type[Exception], ...] = ()) -> T:
        return self._retrying(fn, also=also)

    def know_instances(self, tx: Tx, instance_ids: list[UUID]) -> None:
        """Cache what never changes about these instances, in one query for all."""
        missing = [iid for iid in set(instance_ids) if iid not in self._instances]
        for inst in instances.get_many(tx.conn, missing):
            self.remember(inst.id, inst.process_def_id, inst.process_key, inst.business_key)

    def info_for(self, tx: Tx, instance_id: UUID) -> tuple[UUID, str, str | None]:
        info = self._info(tx, instance_id)
        return info.def_id, info.key, info.business_key

    def remember(self, instance_id: UUID, def_id: UUID, key: str, business_key: str | None) -> None:
        self._instances[instance_id] = _InstanceInfo(def_id, key, business_key)
        self._instances.move_to_end(instance_id)
        while len(self._instances) > 10_000:  # a long-running worker meets ever new instances
            self._instances.popitem(last=False)

    # --- the public API ------------------------------------------------------------------

    def deploy(
        self, document: Mapping[str, Any], *, source: str | None = None, source_format: str = "json"
    ) -> lifecycle.Deployed:
        with because("api deploy"):
            return lifecycle.deploy(self, document, source=source, source_format=source_format)

    def deploy_bpmn(self, xml: str | bytes) -> list[lifecycle.Deployed]:
        """Deploy every process of a BPMN 2.0 file (see docs/bpmn.md); the XML is stored as
        each definition's source. All processes are checked before any is stored."""
        from bpm.definitions.bpmn import compile_bpmn

        documents = compile_bpmn(xml)
        source = xml if isinstance(xml, str) else xml.decode("utf-8", "replace")
        return [self.deploy(doc, source=source, source_format="bpmn") for doc in documents]

    def start(
        self,
        key: str,
        variables: Mapping[str, Any] | None = None,
        *,
        business_key: str | None = None,
        idempotency_key: str | None = None,
        version: int | None = None,
        run_now: bool = False,
        message_id: str | None = None,
    ) -> lifecycle.Started:
        """Start an instance, or return the one the same start already made (the key is the
        idempotency key, else the business key, else ``message_id``: see
        ``lifecycle.start_key``). ``run_now`` advances it in this call (for a worker's job)
        instead of queueing its first step."""
        with because(f"api start {key}"):
            return lifecycle.start(
                self,
                key,
                variables,
                business_key=business_key,
                idempotency_key=idempotency_key,
                version=version,
                run_now=run_now,
                message_id=message_id,
            )

    def cancel(self, instance_id: UUID | str, reason: str = "cancelled by an operator") -> None:
        with because("operator cancel"):
            lifecycle.cancel(self, as_id(instance_id, "instance"), reason)

    def retry(self, token_or_task: UUID | str, retries: int | None = None) -> UUID:
        with because(f"operator retry {token_or_task}"):
            return lifecycle.retry(self, as_id(token_or_task, "token or task"), retries)

    def resolve(self, incident_or_token: UUID | str, note: str | None = None) -> UUID:
        """Mark an open incident resolved (the operator fixed the cause by hand)."""
        with because(f"operator resolve {incident_or_token}"):
            return lifecycle.resolve(self, as_id(incident_or_token, "incident or token"), note)

    def show(self, instance_id: UUID | str) -> dict[str, Any]:
        return views.show(self, as_id(instance_id, "instance"))

    def trace(self, instance_id: UUID | str) -> list[dict[str, Any]]:
        return views.trace(self, as_id(instance_id, "instance"))

    def diagram(self, instance_id: UUID | str, fmt: str = "mermaid") -> str:
        """The definition drawn with the path the instance took: ``"mermaid"`` text or an
        ``"svg"`` document (``bpm.diagram``)."""
        return views.diagram(self, as_id(instance_id, "instance"), fmt)

    def instances(
        self,
        *,
        state: str | None = None,
        key: str | None = None,
        business_key: str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        return views.list_instances(
            self, state=state, key=key, business_key=business_key, limit=limit
        )

    def find_instances(
        self,
        *,
        key: str | None = None,
        version: int | None = None,
        business_key: str | None = None,
        state: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        with_open_incidents: bool = False,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Instances by definition (key, version), business key, state, the time range they
        were alive in, and open incidents; newest first."""
        return queries.find_instances(
            self,
            InstanceFilter(
                key=key,
                version=version,
                business_key=business_key,
                state=state,
                since=since,
                until=until,
                with_open_incidents=with_open_incidents,
            ),
            limit,
        )

    def history(
        self,
        *,
        instance_id: UUID | str | None = None,
        key: str | None = None,
        version: int | None = None,
        business_key: str | None = None,
        state: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Sequence[str] = (),
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        """History rows of the matching instances, in write order, within [since, until]."""
        iid = as_id(instance_id, "instance") if instance_id is not None else None
        return queries.history(
            self,
            InstanceFilter(
                key=key,
                version=version,
                business_key=business_key,
                state=state,
                since=since,
                until=until,
                instance_id=iid,
            ),
            types=types,
            limit=limit,
        )

    def incidents(self, limit: int = 100) -> list[dict[str, Any]]:
        return views.open_incidents(self, limit)

    # External tasks (workers outside the engine): see bpm.engine.external.

    def fetch_and_lock(
        self,
        worker_id: str,
        topics: Sequence[external.TopicRequest],
        max_tasks: int = 10,
        long_poll: float = 0.0,
        listener: Listener | None = None,
    ) -> list[external.LockedTask]:
        """Lock up to ``max_tasks`` tasks; with ``long_poll`` seconds, wait for one to appear.
        A long-running worker passes its own ``listener`` (``task_listener``) so that each
        long poll does not open a connection of its own."""
        with because(f"api fetch_and_lock worker={worker_id}"):
            return external.fetch_and_lock(self, worker_id, topics, max_tasks, long_poll, listener)

    def task_listener(self, topics: Iterable[str]) -> AbstractContextManager[Listener]:
        """A connection that hears when a task of one of ``topics`` is offered."""
        return listen(self.db, set(topics))

    def complete(
        self,
        task_id: UUID | str,
        worker_id: str,
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> None:
        """Complete an external task; with ``attempt``, only the lock of that attempt (a
        report sent again after a lost reply then never closes a later run)."""
        with because(f"api complete task={task_id}"):
            external.complete(self, as_id(task_id, "task"), worker_id, variables, attempt)

    def fail(
        self,
        task_id: UUID | str,
        worker_id: str,
        error_message: str,
        error_details: str | None = None,
        retries: int = 0,
        retry_timeout: timedelta = timedelta(0),
        *,
        attempt: int | None = None,
    ) -> None:
        with because(f"api fail task={task_id}"):
            external.fail(
                self,
                as_id(task_id, "task"),
                worker_id,
                error_message,
                error_details,
                retries,
                retry_timeout,
                attempt,
            )

    def bpmn_error(
        self,
        task_id: UUID | str,
        worker_id: str,
        code: str,
        message: str = "",
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> None:
        with because(f"api bpmn_error task={task_id}"):
            external.bpmn_error(
                self, as_id(task_id, "task"), worker_id, code, message, variables, attempt
            )

    def extend_lock(self, task_id: UUID | str, worker_id: str, new_duration: timedelta) -> None:
        with because(f"api extend_lock task={task_id}"):
            external.extend_lock(self, as_id(task_id, "task"), worker_id, new_duration)

    def unlock(self, task_id: UUID | str, *, worker_id: str | None = None) -> None:
        """Give a locked task back. With ``worker_id``, only if that worker holds the lock
        (a worker giving back its own tasks must not give back another's)."""
        with because(f"api unlock task={task_id}"):
            external.unlock(self, as_id(task_id, "task"), worker_id)

        # Wait states: timers, user tasks, messages (bpm.engine.timers, user_tasks, messages).

    def fire_due_timers(self, now: datetime | None = None, batch: int = 500) -> int:
        """Fire the timers due at ``now`` (default: the engine's clock); returns how many."""
        with because("scan timers"):
            return len(timers.scan_timers(self, now or self.clock.now(), batch))

    def next_timer_due(self) -> datetime | None:
        return timers.next_due(self)

    def user_tasks(
        self,
        *,
        assignee: str | None = None,
        group: str | None = None,
        instance_id: UUID | str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Open user tasks, oldest first, optionally by assignee, candidate group, instance."""
        iid = as_id(instance_id, "instance") if instance_id is not None else None
        return user_tasks.listing(
            self, assignee=assignee, group=group, instance_id=iid, limit=limit
        )

    def claim(self, task_id: UUID | str, user: str) -> None:
        with because(f"api claim task={task_id}"):
            user_tasks.claim(self, as_id(task_id, "task"), user)

    def unclaim(self, task_id: UUID | str) -> None:
        with because(f"api unclaim task={task_id}"):
            user_tasks.unclaim(self, as_id(task_id, "task"))

    def complete_user_task(
        self,
        task_id: UUID | str,
        variables: Mapping[str, Any] | None = None,
        *,
        user: str | None = None,
    ) -> None:
        with because(f"api complete_user_task task={task_id}"):
            user_tasks.complete(self, as_id(task_id, "task"), variables, user)

    def correlate(
        self,
        message: str,
        *,
        business_key: str | None = None,
        instance_id: UUID | str | None = None,
        variables: Mapping[str, Any] | None = None,
        all_waiting: bool = False,
    ) -> list[UUID]:
        """Deliver a message to the token(s) waiting for it; raises ``NoMatchingWait`` when
        none waits, ``AmbiguousCorrelation`` when several do and ``all_waiting`` is false."""
        with because(f"api correlate {message}"):
            iid = as_id(instance_id, "instance") if instance_id is not None else None
            return messages.correlate(
                self,
                message,
                business_key=business_key,
                instance_id=iid,
                values=variables,
                all_waiting=all_waiting,
            )

    def run_scans(
        self, now: datetime | None = None, cfg: scans.ScanConfig | None = None
    ) -> dict[str, int]:
        with because("scans"):
            return scans.run_all_scans(self, now, cfg or scans.ScanConfig())

    def cleanup_history(
        self, now: datetime | None = None, default_ttl: timedelta | None = None
    ) -> int:
        """Delete ended instances past their ``historyTimeToLive`` (else ``default_ttl``; with
        neither they are kept) with all their rows; returns how many (bpm.engine.retention)."""
        return retention.cleanup(self, now or self.clock.now(), default_ttl=default_ttl)
