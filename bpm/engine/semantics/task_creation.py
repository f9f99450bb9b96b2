"""A user task's creation with listeners: ``create``, then ``assignment``, then the task.

Camunda 7.12+ fires a new task's ``create`` listeners first and its ``assignment`` listeners
after them when the task has an assignee by then (its own, or one a ``create`` listener set),
all before anyone sees the task. bpm runs each listener as a task of its own while the token
waits, so the task to be is evaluated first (people, dates, priority) and carried by the
listeners' handler tasks (``listeners.carried``), each applying its ``task`` setters to it;
the last one creates the user task with what they left. An assignee set by an ``assignment``
listener fires no further ``assignment`` listener.
"""

from __future__ import annotations

from bpm.definitions.assignments import Assigned
from bpm.definitions.model import ListenerEvent, Node
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import listeners, waits
from bpm.store.rows import TokenRow


def has_listeners(node: Node) -> bool:
    """Whether creating ``node``'s task runs listeners first."""
    return any(node.listeners_of(e) for e in (ListenerEvent.CREATE, ListenerEvent.ASSIGNMENT))


def begin(tx: Tx, tok: TokenRow, node: Node) -> Next:
    """The task to be, evaluated now, and its first creation listener (or the task)."""
    who = waits.assigned(tx, tok, node)
    if who is None:
        return None
    if node.listeners_of(ListenerEvent.CREATE):
        return listeners.run(tx, tok, node, ListenerEvent.CREATE, carrying=who)
    return _assignment(tx, tok, node, who)


def listener_done(
    tx: Tx, tok: TokenRow, node: Node, step: listeners.Step, who: Assigned | None
) -> Next:
    """A creation listener finished, leaving the task to be as ``who`` (None: a listener
    task made before tasks carried it; the task is evaluated now and the ``assignment``
    listeners, which such a task ran first, are not run again)."""
    if who is None:
        following = step.index + 1
        if following < len(node.listeners_of(step.event)):
            return listeners.run(tx, tok, node, step.event, following)
        if step.event is ListenerEvent.ASSIGNMENT and node.listeners_of(ListenerEvent.CREATE):
            return listeners.run(tx, tok, node, ListenerEvent.CREATE)
        return waits.create_user_task(tx, tok, node)
    following = step.index + 1
    if following < len(node.listeners_of(step.event)):
        return listeners.run(tx, tok, node, step.event, following, carrying=who)
    if step.event is ListenerEvent.CREATE:
        return _assignment(tx, tok, node, who)
    return waits.create_user_task(tx, tok, node, who)


def _assignment(tx: Tx, tok: TokenRow, node: Node, who: Assigned) -> Next:
    if who.assignee is not None and node.listeners_of(ListenerEvent.ASSIGNMENT):
        return listeners.run(tx, tok, node, ListenerEvent.ASSIGNMENT, carrying=who)
    return waits.create_user_task(tx, tok, node, who)
