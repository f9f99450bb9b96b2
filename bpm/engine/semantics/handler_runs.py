"""Running an in-process handler task: lock, run outside any transaction, record the outcome.

Three steps, two transactions: the lock counts the attempt as it
starts; the handler runs with no transaction open; the outcome is committed only if the task
is still locked by this runner at the version it locked (a late result after the lock expired
and another runner took over is rejected).
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any
from uuid import UUID

from bpm.definitions import mappings
from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Next, Stale, Tx
from bpm.engine.semantics import (
    call_mappings,
    call_returns,
    interruptions,
    listeners,
    scopes,
    task_edits,
    task_moves,
)
from bpm.engine.semantics.bpmn_errors import caught_anywhere, exception_code, throw_from_task
from bpm.engine.semantics.called_errors import caller_catches, propagate
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.nodes import leave, listener_done
from bpm.errors import BadVariables, BpmError, BpmnError
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.states import TaskEvent, TaskKind, TaskState, TokenMode, TokenState
from bpm.store import tasks
from bpm.store.rows import TaskRow, TokenRow
from bpm.variables import check_variables

MAX_DETAILS = 8000
#: How long a handler task's lock lasts before the node's own timeout is fitted to it.
DEFAULT_LOCK = timedelta(minutes=5)


@dataclass(frozen=True)
class Outcome:
    """What a handler run produced: variables to set, or an error to record."""

    variables: dict[str, Any] | None = None
    error: str | None = None
    details: str | None = None
    retryable: bool = True
    bpmn_code: str | None = None
    #: Variables a BPMN error carries: set whether or not a boundary catches it.
    error_variables: dict[str, Any] | None = None
    #: The BPMN error's own message, as the thrower gave it (``errorMessageVariable``).
    bpmn_message: str = ""
    #: What a task listener's ``task`` setters changed (``task_edits.apply``).
    task_edits: dict[str, Any] | None = None
    #: The class names of the exception a handler raised and its bases, most specific first
    #: (an error code may name one: ``bpmn_errors.exception_code``).
    exception_types: tuple[str, ...] = ()


def lock_task(tx: Tx, task_id: UUID, lock_for: timedelta) -> TaskRow | None:
    """Lock a READY handler task for this runner (the attempt counts); None if it is not."""
    return task_moves.lock(tx, task_id, lock_for)


def fit_lock(tx: Tx, task: TaskRow, lock_for: timedelta) -> TaskRow:
    """Give the lock the node's own timeout when it differs from the default used to lock."""
    expire = tx.now + lock_for
    if task.lock_expire_at == expire:
        return task
    tasks.set_lock_expiry(tx.conn, task, expire)
    return replace(task, lock_expire_at=expire)


def configuration(
    node: Node, fields: tuple[mappings.VariableMapping, ...], values: Mapping[str, Any]
) -> dict[str, Any] | Outcome:
    """``fields`` (the node's, or its listener's) for ``ctx.fields``, evaluated over the
    variables the task sees; a field that cannot be evaluated fails the run (an incident
    naming the field)."""
    if not fields:
        return {}
    try:
        return mappings.evaluate(fields, values)
    except BpmError as exc:
        return Outcome(error=f"field of task {node.id!r}: {exc}", retryable=False)


def connector_result(node: Node, outcome: Outcome, values: Mapping[str, Any]) -> Outcome:
    """A connector sets only what its output parameters say, evaluated over its result and
    the variables; with none it sets nothing (its result stays the connector's)."""
    if node.connector_outputs is None or outcome.variables is None:
        return outcome
    try:
        mapped = mappings.evaluate(node.connector_outputs, {**values, **outcome.variables})
    except BpmError as exc:
        return Outcome(error=f"connector output of task {node.id!r}: {exc}", retryable=False)
    return replace(outcome, variables=mapped)


def invoke(
    registry: HandlerRegistry, task: TaskRow, ctx: HandlerContext, result_variable: str | None
) -> Outcome:
    """Call the handler; never raises (every failure becomes an ``Outcome``). With a
    ``result_variable`` the whole result, whatever its JSON type, goes to that variable."""
    fn = registry.get(task.handler or "")
    if fn is None:
        known = ", ".join(registry.names()) or "none"
        return Outcome(
            error=f"no handler is registered as {task.handler!r} in this worker "
            f"(registered: {known}); set BPM_IMPORTS to the module that "
            f"registers it",
            retryable=False,
        )
    try:
        result = fn(ctx)
    except BpmnError as exc:
        return _bpmn_outcome(task, exc)
    except Exception as exc:
        details = traceback.format_exc()[-MAX_DETAILS:]
        kinds = tuple(c.__name__ for c in type(exc).__mro__ if c not in (BaseException, object))
        return Outcome(error=f"{type(exc).__name__}: {exc}", details=details, exception_types=kinds)
    if result_variable is not None:
        return _check_result(task, {result_variable: result})
    return _check_result(task, result)


def _bpmn_outcome(task: TaskRow, exc: BpmnError) -> Outcome:
    try:
        values = check_variables(exc.variables, where=f"the BpmnError of handler {task.handler!r}")
    except BadVariables as bad:
        return Outcome(error=str(bad), retryable=False)
    return Outcome(
        error=str(exc),
        bpmn_code=exc.code,
        retryable=False,
        error_variables=values,
        bpmn_message=exc.message,
    )


def _check_result(task: TaskRow, result: object) -> Outcome:
    if result is None:
        return Outcome(variables={})
    if not isinstance(result, Mapping):
        return Outcome(
            error=f"handler {task.handler!r} returned {type(result).__name__}; "
            f"a handler returns a dict of variables or None",
            retryable=False,
        )
    try:
        return Outcome(variables=check_variables(result, where=f"handler {task.handler!r}"))
    except BadVariables as exc:
        return Outcome(error=str(exc), retryable=False)


def complete_task(
    tx: Tx,
    g: ProcessGraph,
    task: TaskRow,
    values: dict[str, Any],
    token: TokenRow | None = None,
    local_values: dict[str, Any] | None = None,
    edits: dict[str, Any] | None = None,
) -> Next:
    """Task DONE, result variables written, token moved on: one transaction.

    ``token`` is the token row as the transaction that locked the task left it, when that
    is known; its version is checked when the move is written, so no read is needed.
    ``local_values`` go to the task's own scope (its output mappings can read them).
    ``edits``: a task listener's changes to its user task.
    """
    task_moves.change(
        tx,
        task,
        state=TaskState.DONE,
        event=TaskEvent.COMPLETED,
        data={"variables": values} if values else None,
        miss="stale",
        message=f"task {task.id} is no longer locked by {tx.actor} at version "
        f"{task.version}; its result is dropped",
    )
    tok = token if token is not None else tx.token(task.token_id)
    if tok is None or tok.state != TokenState.WAITING or tok.node_id != task.node_id:
        raise Stale(f"token of task {task.id} is no longer waiting at {task.node_id!r}")
    if call_mappings.phase_of(task) is not None:
        return call_returns.mapping_returned(tx, g, tok, task, values)
    scopes.write(tx, g, tok, values)
    if local_values:
        scopes.write(tx, g, tok, local_values, local=True)
    step = listeners.step_of(g, task)
    if step is not None:
        return listener_done(tx, g, tok, step, task_edits.apply(tx, task, step, edits or {}))
    return leave(tx, g, tok, g.node(task.node_id))


def fail_task(tx: Tx, g: ProcessGraph, task: TaskRow, outcome: Outcome) -> Next:
    """Retry later with backoff while attempts remain; else fail the token with an incident.

    A BPMN error goes to the error boundary that catches its code: the activity's, else the
    innermost enclosing subprocess's.
    """
    if outcome.bpmn_code is not None:
        scopes.write_for_task(tx, g, task, outcome.error_variables or {})
        handled = catch_bpmn_error(tx, g, task, outcome.bpmn_code, outcome.bpmn_message)
        if handled is not None:
            return handled.next
    elif code := exception_code(g, task.node_id, outcome.exception_types):
        # caught as a BPMN error at once, without retries, as Camunda 7 catches it
        handled = catch_bpmn_error(tx, g, task, code, outcome.error or "")
        if handled is not None:
            return handled.next
    node = g.node(task.node_id)
    policy = node.retry
    owner = None
    if node.compensation is not None:  # a compensation's own policy (default: no retry)
        owner = tx.token(task.token_id)
        if owner is not None and owner.mode == TokenMode.COMPENSATION:
            policy = node.compensation.retry
    retry = outcome.retryable and task.retries > 0
    retry_at = tx.now + policy.delay(task.attempts) if retry else None
    state = TaskState.READY if retry else TaskState.FAILED
    task_moves.change(
        tx,
        task,
        state=state,
        event=TaskEvent.FAILED,
        data={
            "attempt": task.attempts,
            "error": outcome.error,
            "retry_at": retry_at.isoformat() if retry_at else None,
            "bpmn_error": outcome.bpmn_code,
        },
        retry_at=retry_at,
        retries=task.retries if retry else 0,
        error_message=outcome.error,
        error_details=outcome.details,
        miss="stale",
        message=f"task {task.id} is no longer locked by {tx.actor}; failure dropped",
    )
    if retry:
        tx.run_handler_later(task.id, retry_at)
        return None
    tok = owner or tx.token(task.token_id)
    if tok is None or tok.state != TokenState.WAITING:
        raise Stale(f"token of task {task.id} is no longer waiting")
    attempts = f" after {task.attempts} attempt{'s' if task.attempts != 1 else ''}"
    fail_token(
        tx,
        tok,
        kind="bpmn-error" if outcome.bpmn_code else "handler",
        message=f"task {task.node_id!r} failed{attempts}: {outcome.error}",
        details=outcome.details,
        task_id=task.id,
    )
    return None


@dataclass(frozen=True)
class Handled:
    """A BPMN error dealt with: caught in this instance (``next``: where its token goes on),
    or sent up to the call activity that started the instance (``next`` is None)."""

    next: Next


def catch_bpmn_error(
    tx: Tx, g: ProcessGraph, task: TaskRow, code: str, message: str
) -> Handled | None:
    """Task ends (DONE, with the error kept) and its token takes the catching boundary, its
    own or an enclosing subprocess's, or the error goes up to the calling instance; None
    when nothing catches ``code``."""
    here = caught_anywhere(g, task.node_id, code)
    if not here and not caller_catches(tx, task.instance_id, code):
        return None
    if interruptions.is_interruption(listeners.step_of(g, task)):
        return None
    tok = tx.token(task.token_id)
    if tok is None or tok.state != TokenState.WAITING:
        raise Stale(f"token of task {task.id} is no longer waiting")
    if tok.mode != TokenMode.FORWARD:
        return None  # undoing an activity: its boundaries belong to the forward run
    task_moves.change(
        tx,
        task,
        state=TaskState.DONE,
        event=TaskEvent.BPMN_ERROR,
        data={"code": code, "message": message},
        error_message=message,
        miss="stale",
        message=f"task {task.id} changed before its BPMN error was recorded",
    )
    if not here:  # the call activity that started this instance catches it
        propagate(tx, tok, code, message)
        return Handled(None)
    caught = throw_from_task(tx, g, tok, code, message)
    return None if caught is None else Handled(caught)


def expire_lock(tx: Tx, g: ProcessGraph, task: TaskRow) -> Next:
    """A runner took the lock and never reported back: that run used up an attempt."""
    if task.retries > 0:
        task_moves.change(
            tx,
            task,
            state=TaskState.READY,
            event=TaskEvent.LOCK_EXPIRED,
            data={"owner": task.lock_owner, "attempt": task.attempts},
            retry_at=tx.now,
            error_message="the handler's lock expired before it reported back",
            miss="stale",
            message=f"task {task.id} changed before its lock expired",
        )
        if task.kind == TaskKind.HANDLER:
            tx.run_handler_later(task.id)
        else:
            tx.notify_topics.add(str(task.topic))
        return None
    who = "handler's worker" if task.kind == TaskKind.HANDLER else "external worker"
    outcome = Outcome(
        error=f"the {who} never reported back ({task.lock_owner}; killed, or its lock expired)",
        retryable=False,
    )
    return fail_task(tx, g, task, outcome)
