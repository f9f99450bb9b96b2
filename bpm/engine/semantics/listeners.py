"""Listeners: handlers that run at a node's events, each as a task of its own.

A listener is user code, so it never runs inside the token's transaction: the token waits
(WAITING for a TASK) while a handler task runs the listener, with the node's retry policy and
an incident when it fails for good, exactly like a service task's handler. When it completes,
its variables are written and the token goes on with the next listener of the event, or with
what the event leads to (``nodes.listener_done``). A token has one open task at a time, so a
listener never runs beside the task of its node.

The task's ``topic`` column, unused by handler tasks, names the listener it runs:
``listener:<event>:<index>`` (``...:<flow id>`` for a flow's ``take`` listener).
"""

from __future__ import annotations

from dataclasses import dataclass

from bpm.definitions.model import Flow, Listener, ListenerEvent, Node, ProcessGraph
from bpm.engine.core.tx import Next, RunTask, Tx
from bpm.engine.semantics import task_moves
from bpm.engine.semantics.moves import move
from bpm.states import TaskKind, TokenEvent, TokenState, WaitKind
from bpm.store.rows import TaskRow, TokenRow

PREFIX = "listener:"


@dataclass(frozen=True)
class Step:
    """Which listener a task runs: the node's ``event`` listener number ``index``."""

    listener: Listener
    event: ListenerEvent
    index: int
    #: A ``take`` listener's flow.
    flow: str | None = None


def run(
    tx: Tx,
    tok: TokenRow,
    node: Node,
    event: ListenerEvent,
    index: int = 0,
    flow: Flow | None = None,
) -> Next:
    """The token waits while listener ``index`` of ``event`` runs (of ``flow``, for a
    ``take``: the token waits at the flow's target, not yet arrived)."""
    if tok.state != TokenState.WAITING or tok.wait_kind != WaitKind.TASK:
        tok = move(
            tx,
            tok,
            state=TokenState.WAITING,
            event=TokenEvent.WAITING,
            wait_kind=WaitKind.TASK,
            data={"listener": event.value},
        )
    return _task(tx, tok, node, event, index, flow)


def _task(
    tx: Tx, tok: TokenRow, node: Node, event: ListenerEvent, index: int, flow: Flow | None
) -> Next:
    listener = (flow.listeners if flow is not None else node.listeners_of(event))[index]
    marker = f"{PREFIX}{event.value}:{index}" + (f":{flow.id}" if flow is not None else "")
    task = task_moves.new_task(
        tx,
        tok,
        node.id,
        TaskKind.HANDLER,
        handler=listener.handler,
        topic=marker,
        retries=node.retry.max_attempts,
        priority=node.priority,
    )
    data = {
        "handler": listener.handler,
        "listener": event.value,
        "index": index,
        "max_attempts": node.retry.max_attempts,
    }
    task_moves.create(tx, task, data)
    return RunTask(task.id)


def step_of(g: ProcessGraph, task: TaskRow) -> Step | None:
    """The listener a handler task runs; None for a node's own handler task."""
    marker = task.topic
    if task.kind != TaskKind.HANDLER or not marker or not marker.startswith(PREFIX):
        return None
    event_name, _, rest = marker[len(PREFIX) :].partition(":")
    index, _, flow_id = rest.partition(":")
    event = ListenerEvent(event_name)
    if flow_id:
        return Step(g.flows[flow_id].listeners[int(index)], event, int(index), flow_id)
    found = g.node(task.node_id).listeners_of(event)
    return Step(found[int(index)], event, int(index))


def creation_events(node: Node) -> tuple[ListenerEvent, ...]:
    """The listener events a user task's creation fires, in order: ``assignment`` (when it
    is created with an assignee) before ``create``, as Camunda fires them."""
    events = [ListenerEvent.CREATE]
    if node.assignee is not None:
        events.insert(0, ListenerEvent.ASSIGNMENT)
    return tuple(e for e in events if node.listeners_of(e))
