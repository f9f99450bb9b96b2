"""The job runner: carries out one dispatched job, from the decoded ids to the commit.

Jobs (advance a token, run a handler) re-read their rows and act under version checks, so a
job delivered twice, late, or after someone else did the work ends as a logged no-op.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any
from uuid import UUID

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.causes import because
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Conflict, Next, NextToken, RunTask, Stale, Tx
from bpm.engine.jobs.branches import Begins, Branch, TakenBranches
from bpm.engine.semantics import (
    call_mappings,
    code_runs,
    handler_runs,
    listeners,
    steps,
    task_edits,
)
from bpm.errors import ConfigError, NotFound
from bpm.handlers import HandlerContext
from bpm.observe import HandlerOutcome
from bpm.store.db import first_statement_commits
from bpm.store.outages import until_available
from bpm.store.rows import TaskRow, TokenRow
from bpm.task_view import TaskFacts

log = logging.getLogger("bpm.engine")

DONE, STALE, UNKNOWN, DEFERRED = "done", "stale", "unknown", "deferred"


#: How far one job goes on in process before it queues the rest: steps and seconds.
CHAIN_STEPS, CHAIN_SECONDS = 100, 1.0


class JobRunner:
    """Follows a job through automatic nodes and inline handler runs, at most
    ``chain_limit`` steps and about ``chain_seconds``, so queues stay fair: one long
    instance, or one with slow handlers, cannot keep a worker from the rest of its queue."""

    def __init__(
        self,
        core: EngineCore,
        chain_limit: int = CHAIN_STEPS,
        chain_seconds: float = CHAIN_SECONDS,
    ) -> None:
        if chain_limit < 1:
            raise ConfigError(
                f"a job's chain needs at least 1 step (BPM_CHAIN_STEPS), got {chain_limit}"
            )
        if not chain_seconds > 0:
            raise ConfigError(
                f"a job's chain needs a time above 0 s (BPM_CHAIN_SECONDS), got {chain_seconds}"
            )
        self.core = core
        self.chain_limit = chain_limit
        self.chain_seconds = chain_seconds

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

    def go_on(self, nxt: Next) -> str:
        """Go on from a step the caller committed (a worker's start) as the rest of its run."""
        return self._chain(nxt, taken=1)

    def _chain(self, nxt: Next, taken: int = 0) -> str:
        """Every transaction re-reads and version-checks what it changes; the chain only
        saves the broker hop between them. ``taken``: steps of this run already committed.

        Branches a step took on (``branches``: their tasks are reserved for this runner)
        run when the path before them stops, even past the bound: nobody else can run them
        before their locks expire. Past the bound each goes one step, and what follows it is
        queued."""
        queued = TakenBranches(self.core)
        try:
            return self._run(nxt, taken, queued)
        except BaseException:
            queued.release()
            raise

    def _run(self, nxt: Next, taken: int, queued: TakenBranches) -> str:
        outcome = DONE
        until = time.monotonic() + self.chain_seconds
        step = taken
        while nxt is not None or queued:
            if nxt is None:
                nxt = queued.pop()
                if nxt is None:
                    continue
            elif step >= self.chain_limit:  # a run that begins at its bound goes no step
                self.core.send_next(nxt)
                outcome, nxt = DEFERRED, None
                continue
            # The last step of a chain (by count or by time) creates its tasks unlocked, so
            # the job that carries on from it, on any worker, can lock them.
            last = step >= self.chain_limit - 1 or time.monotonic() >= until
            try:
                nxt = self._step(nxt, first=step == 0, inline=not last, queued=queued)
            except Stale as exc:
                log.info("no-op: %s", exc, extra={"action": "stale"})
                outcome, nxt = (STALE if step == taken else outcome), None
            except NotFound as exc:
                log.warning("dropped: %s", exc, extra={"action": "unknown"})
                outcome, nxt = UNKNOWN, None
            step += 1
            if last and nxt is not None:
                self.core.send_next(nxt)
                outcome, nxt = DEFERRED, None
        return outcome

    def _step(
        self, nxt: NextToken | RunTask, *, first: bool, inline: bool, queued: TakenBranches
    ) -> Next:
        if isinstance(nxt, NextToken):
            # The row the last transaction saw saves a read on the first try only: a retry
            # after a lost race reads the token afresh.
            seen = [nxt.seen]

            def once() -> tuple[Next, Settled]:
                row, seen[0] = seen[0], None
                return self._advance_once(nxt, inline, row, queued)

            result, settled = self.core.retrying(once)
            queued.settle(*settled)
            return result
        if nxt.locked is not None:
            return self._invoke_and_record(nxt.locked, nxt.values or {}, nxt.token, inline, queued)
        if self.core.run_handlers_inline or first:
            return self._run_handler_once(nxt.task_id, inline, queued)
        self.core.send_next(nxt)
        return None

    def _advance_once(
        self, nxt: NextToken, inline: bool, seen: TokenRow | None, queued: TakenBranches
    ) -> tuple[Next, Settled]:
        started = time.perf_counter()
        with self.core.transaction(inline=inline) as tx:
            fresh = seen is None or seen.version != nxt.version
            tok = _read_token(tx, nxt.token_id) if fresh else seen
            if tok is None:
                raise NotFound(f"token {nxt.token_id} does not exist")
            if tok.version != nxt.version:
                raise Stale(
                    f"token {tok.id} is at version {tok.version}, job expected {nxt.version}"
                )
            g = self.core.graph_of(tx, tok.instance_id)
            node_type = g.node(tok.node_id).type
            result = steps.carry_through(tx, g, steps.advance(tx, g, tok))
            settled = _branches_of(tx, g, result, inline, queued)
        if self.core.observer.enabled:  # committed: the step counts
            self.core.observer.step_done(node_type, time.perf_counter() - started)
        return result, settled

    def _run_handler_once(self, task_id: UUID, inline: bool, queued: TakenBranches) -> Next:
        with self.core.transaction() as tx:
            task = handler_runs.lock_task(tx, task_id, handler_runs.DEFAULT_LOCK)
            if task is None:
                raise Stale(
                    f"task {task_id} is not READY and due; another runner has it or it is finished"
                )
            g = self.core.graph_of(tx, task.instance_id)
            task = handler_runs.fit_lock(tx, task, g.node(task.node_id).timeout)
            values = call_mappings.seen_by(tx, g, task)
            user_task = task_edits.facts(tx, g, task)
        return self._invoke_and_record(task, values, None, inline, queued, user_task)

    def _invoke_and_record(
        self,
        task: TaskRow,
        values: dict[str, Any],
        token: TokenRow | None,
        inline: bool,
        queued: TakenBranches,
        user_task: TaskFacts | None = None,
    ) -> Next:
        """Run the handler with no transaction open, then commit its outcome (``user_task``:
        what a task listener's ``task`` is)."""
        info = self.core.cached_info(task.instance_id)
        if info is None:
            with self.core.transaction() as tx:
                info = self.core.info(tx, task.instance_id)
        g = self.core.graph(info.def_id)
        node = g.node(task.node_id)
        step = listeners.step_of(g, task)
        fields = node.fields if step is None else step.listener.fields
        configured = handler_runs.configuration(node, fields, values)
        if isinstance(configured, handler_runs.Outcome):
            return self._record(g, task, configured, token, inline, queued)
        ctx = HandlerContext(
            values,
            str(task.id),
            task.attempts,
            task.instance_id,
            info.business_key,
            info.key,
            task.node_id,
            task.id,
            configured,
            step.event.value if step is not None else call_mappings.event_of(task),
        )
        started = time.perf_counter()
        code = step.listener.code if step is not None else node.code
        handlers, result_variable = self.core.handlers, node.result_variable
        run: code_runs.RunsCode | None = None
        if code is not None:  # the model's own expression, bean or script
            kept = node.result_variable if step is None else None
            now = self.core.clock.now()
            run = code_runs.RunsCode(
                self.core.beans, self.core.handlers, now, kept, node.name, user_task
            )
            handlers, result_variable = run.as_registry(task, code), None
        if step is not None:  # a listener sets the variables it returns
            outcome = handler_runs.invoke(handlers, task, ctx, None)
            if run is not None and outcome.variables is not None and run.edits:
                outcome = replace(outcome, task_edits=dict(run.edits))
        else:
            outcome = handler_runs.invoke(handlers, task, ctx, result_variable)
            outcome = handler_runs.connector_result(node, outcome, values)
        seconds = time.perf_counter() - started
        log.debug("handler %s ran in %.1f ms", task.handler, seconds * 1000)
        if self.core.observer.enabled:
            self.core.observer.handler_done(task.handler or "", seconds, _outcome_of(outcome))
        return self._record(g, task, outcome, token, inline, queued)

    def _record(
        self,
        g: ProcessGraph,
        task: TaskRow,
        outcome: handler_runs.Outcome,
        token: TokenRow | None,
        inline: bool,
        queued: TakenBranches,
    ) -> Next:
        """Commit the outcome. A version race with another row it touches (a sibling branch
        of a subprocess a caught error ends, say) is tried again from fresh reads, the token
        included; if it was the task or its token that moved, that try finds out and drops
        the result."""
        known = [token]

        def once() -> tuple[Next, Settled]:
            tok, known[0] = known[0], None
            with self.core.transaction(inline=inline) as tx:
                tx.know_graph(task.instance_id, g)
                if outcome.variables is None:
                    result = handler_runs.fail_task(tx, g, task, outcome)
                else:
                    result = handler_runs.complete_task(
                        tx, g, task, outcome.variables, tok, edits=outcome.task_edits
                    )
                    result = steps.carry_through(tx, g, result)
                settled = _branches_of(tx, g, result, inline, queued)
            return result, settled

        # The result exists only in this process: while the database is unreachable, keep
        # trying for as long as the lock lasts (afterwards the lock scan has offered the task
        # again, and the version check would drop the result anyway).
        held = (
            (task.lock_expire_at - self.core.clock.now()).total_seconds()
            if task.lock_expire_at is not None
            else 0.0
        )
        try:
            result, settled = until_available(
                lambda: self.core.retrying(once),
                within=max(30.0, held),
                what=f"recording the result of task {task.id}",
            )
        except Conflict as exc:
            raise Stale(f"result of task {task.id} dropped: {exc}") from exc
        queued.settle(*settled)
        return result


#: What a step's transaction leaves for the branches of its run (``TakenBranches.settle``).
Settled = tuple[list[Branch], set[UUID], Begins | None]


def _branches_of(
    tx: Tx, g: ProcessGraph, result: Next, inline: bool, queued: TakenBranches
) -> Settled:
    """In a step's transaction, after its own path: the branches it takes on, and the
    next queued branch's run begun when the run goes on with it after this commit."""
    taken = queued.take(tx, g, next_is_theirs=result is None) if inline else []
    begun = queued.begin_next(tx) if result is None else None
    return taken, tx.changed_tasks, begun


def _read_token(tx: Tx, token_id: UUID) -> TokenRow | None:
    """The job's token, read as a statement of its own when it is the transaction's first: a
    plain read holds no lock, and under READ COMMITTED every statement sees what was committed
    when it began, inside a transaction or not; every write after it is checked against the
    version it read. A step that then only writes sends its write alone, without BEGIN and
    COMMIT (``first_statement_commits``)."""
    with first_statement_commits(tx.conn):
        return tx.token(token_id)


def _outcome_of(outcome: handler_runs.Outcome) -> HandlerOutcome:
    if outcome.variables is not None:
        return HandlerOutcome.OK
    return HandlerOutcome.FAILED if outcome.bpmn_code is None else HandlerOutcome.BPMN_ERROR
