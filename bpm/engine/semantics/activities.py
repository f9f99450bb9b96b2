"""Entering an activity: the task it creates (handler, external, user), the message or
subprocess it waits for, and a compensation token standing in for the activity it undoes."""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never

from bpm.definitions import mappings
from bpm.definitions.model import PASS_THROUGH, Node, NodeType, ProcessGraph
from bpm.definitions.parse import TOPIC_PATTERN
from bpm.engine.core.tx import Next, NextToken, RunTask, Tx
from bpm.engine.semantics import (
    call_mappings,
    called_compensation,
    sagas,
    scopes,
    task_moves,
    waits,
)
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.moves import create, move, new_token
from bpm.errors import BpmError
from bpm.states import LinkType, TaskKind, TokenEvent, TokenState, WaitKind
from bpm.store.rows import TokenRow


def enter(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """The activity's own work; every node type is named here, so a new type that is not
    an activity must say so (mypy's ``assert_never`` checks the list is whole)."""
    match node.type:
        case NodeType.SERVICE_TASK:
            if node.topic is not None:
                return _create_external_task(tx, g, tok, node)
            return _create_handler_task(tx, g, tok, node)
        case NodeType.USER_TASK:
            return waits.create_user_task(tx, tok, node)
        case NodeType.RECEIVE_TASK:
            return waits.wait_for_message(tx, tok, node)
        case NodeType.SUBPROCESS:
            return _enter_subprocess(tx, g, tok, node)
        case NodeType.CALL_ACTIVITY:
            return call_mappings.enter(tx, g, tok, node)
        case (
            NodeType.START
            | NodeType.END
            | NodeType.TASK
            | NodeType.MANUAL_TASK
            | NodeType.EXCLUSIVE
            | NodeType.EVENT_GATEWAY
            | NodeType.INCLUSIVE
            | NodeType.PARALLEL
            | NodeType.TIMER
            | NodeType.MESSAGE
            | NodeType.CONDITIONAL
            | NodeType.COMPENSATION_THROW
            | NodeType.ESCALATION_THROW
            | NodeType.SIGNAL
            | NodeType.SIGNAL_THROW
            | NodeType.BOUNDARY
        ):
            raise AssertionError(f"{node.type.value} {node.id!r} is not an activity")
        case _:
            assert_never(node.type)


def enter_compensation(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """A COMPENSATION token at the activity it undoes: create the compensation's task, as
    the activity would its own (handler, topic, or the handler activity's task)."""
    spec = node.compensation
    if spec is None:  # a call activity's record: what the called instance did
        return called_compensation.start(tx, tok)
    if spec.node is not None:
        handler = g.node(spec.node)
        if handler.type in PASS_THROUGH:  # a task or manual task: nothing to run, it is undone
            return sagas.compensated(tx, tok)
        stand_in = replace(handler, id=node.id, retry=spec.retry, compensation=None)
    else:
        stand_in = replace(
            node,
            type=NodeType.SERVICE_TASK,
            handler=spec.handler,
            topic=spec.topic,
            retry=spec.retry,
            compensation=None,
        )
    return enter(tx, g, tok, stand_in)


def _create_external_task(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """READY for a worker's fetch-and-lock; waiting workers are woken when it commits."""
    topic = _topic(tx, g, tok, node)
    if topic is None:
        return None
    move(tx, tok, state=TokenState.WAITING, event=TokenEvent.WAITING, wait_kind=WaitKind.TASK)
    task = task_moves.new_task(
        tx,
        tok,
        node.id,
        TaskKind.EXTERNAL,
        topic=topic,
        retries=node.retry.max_attempts,
        priority=node.priority,
    )
    task_moves.create(tx, task, {"topic": topic, "max_attempts": node.retry.max_attempts})
    tx.notify_topics.add(topic)
    return None


def _topic(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> str | None:
    """The node's topic, its expression evaluated over the token's variables; None (the
    token failed with an incident of kind ``topic``) when that gives no usable topic."""
    if node.topic_expression is None:
        return str(node.topic)
    try:
        value = mappings.evaluate((node.topic_expression,), scopes.view(tx, g, tok))["topic"]
    except BpmError as exc:
        fail_token(tx, tok, kind="topic", message=f"task {node.id!r}: topic: {exc}")
        return None
    if not isinstance(value, str) or not TOPIC_PATTERN.match(value):
        fail_token(
            tx,
            tok,
            kind="topic",
            message=f"task {node.id!r}: topic {node.topic!r} gave {value!r}, not a topic",
        )
        return None
    return value


def _create_handler_task(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    waiting = move(
        tx, tok, state=TokenState.WAITING, event=TokenEvent.WAITING, wait_kind=WaitKind.TASK
    )
    task = task_moves.new_task(
        tx,
        tok,
        node.id,
        TaskKind.HANDLER,
        handler=node.handler,
        retries=node.retry.max_attempts,
        priority=node.priority,
    )
    data = {"handler": node.handler, "max_attempts": node.retry.max_attempts}
    if not tx.runs_inline(node.handler or ""):
        task_moves.create(tx, task, data)
        return RunTask(task.id)
    # This process runs the handler right after commit, or later in the same run (a branch
    # it took on): lock it in this same transaction.
    locked = task_moves.create_locked(tx, task, data, node.timeout, reserved=tx.reserving)
    values = scopes.view(tx, g, tok) if g.has_mappings else tx.variables_at_commit(tok.instance_id)
    return RunTask(task.id, locked, values, waiting)


def _enter_subprocess(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.ENTERED_SUBPROCESS,
        wait_kind=WaitKind.CHILDREN,
    )
    start = g.start_of(node.id)
    child = new_token(
        tx,
        instance_id=tok.instance_id,
        node_id=start.id,
        parent=tok.id,
        scope_id=node.id,
        concurrent=False,
        via_flow=None,
    )
    create(tx, [child], [(tok.id, child.id, LinkType.SUBPROCESS)])
    return NextToken(child.id, 0, row=child, seen=child)
