"""Listeners: handlers that run at a node's events, each as a task of its own.

A listener is user code, so it never runs inside the token's transaction: the token waits
(WAITING for a TASK) while a handler task runs the listener, with the node's retry policy and
an incident when it fails for good, exactly like a service task's handler. When it completes,
its variables are written and the token goes on with the next listener of the event, or with
what the event leads to (``nodes.listener_done``). A token has one open task at a time, so a
listener never runs beside the task of its node.

The task's ``topic`` column, unused by handler tasks, names the listener it runs:
``listener:<event>:<index>`` (``...:<flow id>`` for a flow's ``take`` listener, and
``...:!<boundary id>`` for a listener that runs because that interrupting boundary event
takes the token away: ``!`` never appears in an XML id; ``...:+<event>,...`` for a listener
that runs under a token beside an open user task, with the events that follow it, and
``@<user task id>`` after them: the task its ``task`` changes; ``...:^process`` for one of the
process's own ``end`` listeners, ``...:^cancelling`` when a cancel runs it).

A listener of a user task's creation (``create``, then ``assignment`` when the task will have
an assignee, as Camunda 7.12+ fires them) runs before the task exists, so its handler task
carries the task to be, in the user-task columns it otherwise leaves empty (assignee,
candidates, dates; its ``priority`` is the task's), each listener's changes applied to the
next one's; its marker ends in ``:=``. The last one creates the task with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bpm.definitions.assignments import Assigned
from bpm.definitions.model import Flow, Listener, ListenerEvent, Node, ProcessGraph
from bpm.engine.core.tx import RunTask, Tx
from bpm.engine.semantics import task_moves
from bpm.engine.semantics.moves import move
from bpm.states import TaskKind, TokenEvent, TokenState, WaitKind
from bpm.store.rows import TaskRow, TokenRow

PREFIX = "listener:"
#: Marks the boundary event an interruption listener's token goes to when it is done.
_TO_BOUNDARY = "!"
#: Marks a listener that runs under a token of its own beside an open user task.
_BESIDE = "+"
#: Before the id of the open user task a listener beside it changes.
_OF_TASK = "@"
#: Marks a listener of a user task's creation whose task carries the task to be.
_CARRIES = "="
#: Marks one of the process's own ``end`` listeners, run under the root token as the
#: instance ends.
_PROCESS = "^process"
#: Marks one of those run because the instance is being cancelled.
_CANCELLING = "^cancelling"


@dataclass(frozen=True)
class Step:
    """Which listener a task runs: the node's ``event`` listener number ``index``."""

    listener: Listener
    event: ListenerEvent
    index: int
    #: A ``take`` listener's flow.
    flow: str | None = None
    #: The interrupting boundary event the token goes to once the node's ``delete`` and
    #: ``end`` listeners ran.
    boundary: str | None = None
    #: Runs under a token beside an open user task; these events' listeners follow it.
    then: tuple[ListenerEvent, ...] | None = None
    #: The open user task a listener beside it changes.
    user_task: UUID | None = None
    #: A creation listener whose task carries the task to be (``carried``).
    carries: bool = False
    #: One of the process's own ``end`` listeners (``ProcessGraph.end_listeners``).
    process: bool = False
    #: A process ``end`` listener run because the instance is being cancelled.
    cancelling: bool = False

    @property
    def creating(self) -> bool:
        """Whether it is a listener of a user task's creation (the task does not exist)."""
        creation = (ListenerEvent.CREATE, ListenerEvent.ASSIGNMENT)
        plain = self.flow is None and self.boundary is None and self.then is None
        return plain and self.event in creation


def run(
    tx: Tx,
    tok: TokenRow,
    node: Node,
    event: ListenerEvent,
    index: int = 0,
    flow: Flow | None = None,
    *,
    boundary: str | None = None,
    then: tuple[ListenerEvent, ...] | None = None,
    user_task: UUID | None = None,
    carrying: Assigned | None = None,
) -> RunTask:
    """The token waits while listener ``index`` of ``event`` runs (of ``flow``, for a
    ``take``: the token waits at the flow's target, not yet arrived; for a ``boundary``
    that interrupts the node, the token waits at the node it is leaving)."""
    tok = _waiting_for_task(tx, tok, {"listener": event.value})
    listener = _listener(node, event, index, flow)
    flow_id = flow.id if flow is not None else None
    step = Step(listener, event, index, flow_id, boundary, then, user_task, carrying is not None)
    return _task(tx, tok, node, step, carrying)


def run_process_end(
    tx: Tx, g: ProcessGraph, root: TokenRow, index: int = 0, *, cancelling: bool = False
) -> RunTask:
    """The root token waits, where its path ended, while the process's ``end`` listener
    ``index`` runs; when the last one is done the instance ends (``nodes.end_token``), or
    with ``cancelling`` is cancelled (``process_ends.cancel_listener_done``)."""
    root = _waiting_for_task(tx, root, {"listener": ListenerEvent.END.value, "of": "process"})
    step = Step(
        g.end_listeners[index], ListenerEvent.END, index, process=True, cancelling=cancelling
    )
    return _task(tx, root, g.node(root.node_id), step, None)


def _waiting_for_task(tx: Tx, tok: TokenRow, data: dict[str, str]) -> TokenRow:
    """The token waits for a listener's task (a no-op when it already does)."""
    if tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.TASK:
        return tok
    return move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.WAITING,
        wait_kind=WaitKind.TASK,
        data=data,
    )


def _listener(node: Node, event: ListenerEvent, index: int, flow: Flow | None) -> Listener:
    return (flow.listeners if flow is not None else node.listeners_of(event))[index]


def _marker(step: Step) -> str:
    marker = f"{PREFIX}{step.event.value}:{step.index}"
    if step.flow is not None:
        return f"{marker}:{step.flow}"
    if step.boundary is not None:
        return f"{marker}:{_TO_BOUNDARY}{step.boundary}"
    if step.then is not None:
        marker = f"{marker}:{_BESIDE}" + ",".join(e.value for e in step.then)
        return marker if step.user_task is None else f"{marker}{_OF_TASK}{step.user_task}"
    if step.process:
        return f"{marker}:{_CANCELLING if step.cancelling else _PROCESS}"
    return f"{marker}:{_CARRIES}" if step.carries else marker


def _task(tx: Tx, tok: TokenRow, node: Node, step: Step, carrying: Assigned | None) -> RunTask:
    listener, event, index = step.listener, step.event, step.index
    marker = _marker(step)
    task = task_moves.new_task(
        tx,
        tok,
        node.id,
        TaskKind.HANDLER,
        handler=listener.handler,
        topic=marker,
        retries=node.retry.max_attempts,
        **_carried_columns(carrying, node.priority),
    )
    data = {
        "handler": listener.handler,
        "listener": event.value,
        "index": index,
        "max_attempts": node.retry.max_attempts,
    }
    task_moves.create(tx, task, data)
    return RunTask(task.id)


def _carried_columns(who: Assigned | None, priority: int) -> dict[str, Any]:
    if who is None:
        return {"priority": priority}
    return {
        "priority": who.priority,
        "assignee": who.assignee,
        "candidate_users": who.candidate_users or None,
        "candidate_groups": who.candidate_groups or None,
        "due_date": who.due_date,
        "follow_up_date": who.follow_up_date,
    }


def carried(task: TaskRow) -> Assigned:
    """The task to be that a creation listener's ``task`` carries."""
    return Assigned(
        task.assignee,
        list(task.candidate_users or []),
        list(task.candidate_groups or []),
        task.due_date,
        task.follow_up_date,
        task.priority,
    )


def step_of(g: ProcessGraph, task: TaskRow) -> Step | None:
    """The listener a handler task runs; None for a node's own handler task."""
    marker = task.topic
    if task.kind != TaskKind.HANDLER or not marker or not marker.startswith(PREFIX):
        return None
    event_name, _, rest = marker[len(PREFIX) :].partition(":")
    index, _, after = rest.partition(":")
    event = ListenerEvent(event_name)
    if after in (_PROCESS, _CANCELLING):
        found_end, at = g.end_listeners, int(index)
        return Step(found_end[at], event, at, process=True, cancelling=after == _CANCELLING)
    found = g.node(task.node_id).listeners_of(event)
    if after.startswith(_BESIDE):
        names, _, of_task = after[len(_BESIDE) :].partition(_OF_TASK)
        then = tuple(ListenerEvent(e) for e in names.split(",") if e)
        user_task = UUID(of_task) if of_task else None
        return Step(found[int(index)], event, int(index), then=then, user_task=user_task)
    if after.startswith(_TO_BOUNDARY):
        boundary = after[len(_TO_BOUNDARY) :]
        return Step(found[int(index)], event, int(index), boundary=boundary)
    if after == _CARRIES:
        return Step(found[int(index)], event, int(index), carries=True)
    if after:
        return Step(g.flows[after].listeners[int(index)], event, int(index), after)
    return Step(found[int(index)], event, int(index))


def interruption_events(node: Node) -> tuple[ListenerEvent, ...]:
    """The listener events an interrupting boundary event fires at the node it takes a token
    from, in order: a user task's ``delete``, then the node's ``end``, as Camunda fires them
    (its output mappings are not applied: the node did not complete)."""
    events = (ListenerEvent.DELETE, ListenerEvent.END)
    return tuple(e for e in events if node.listeners_of(e))
