"""Listeners of an open user task's later events: a claim or unclaim (``update``, then
``assignment`` when there is a new assignee) and a timeout.

The task's token waits for the user, and a token has one open task at a time, so these
listeners run under a token of their own: it is spawned beside the task's token, as a
non-interrupting boundary event's path is, runs the listeners in order, and ends. The task
stays open throughout, and the scope around it waits for that token before it completes.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from bpm.definitions.model import ListenerEvent, Node
from bpm.engine.core.tx import RunTask, Tx
from bpm.engine.semantics import listeners
from bpm.engine.semantics.moves import spawn_beside
from bpm.store.rows import TokenRow


def after_assignment(node: Node, assignee: str | None) -> tuple[ListenerEvent, ...]:
    """The events a changed assignee fires, in order: ``update``, then ``assignment`` when
    the task now has an assignee; only those with listeners."""
    events = [ListenerEvent.UPDATE]
    if assignee is not None:
        events.append(ListenerEvent.ASSIGNMENT)
    return tuple(e for e in events if node.listeners_of(e))


def run_beside(
    tx: Tx, tok: TokenRow, node: Node, events: tuple[ListenerEvent, ...], user_task: UUID
) -> RunTask | None:
    """Spawn a token beside ``tok`` (waiting at the user task ``node``) that runs the
    listeners of ``events``; None when there are none. Their ``task`` is ``user_task``."""
    if not events:
        return None
    data: dict[str, Any] = {"listeners": [e.value for e in events]}
    beside = spawn_beside(tx, tok, node.id, data)
    first, then = events[0], events[1:]
    return listeners.run(tx, tx.current(beside), node, first, then=then, user_task=user_task)


def next_beside(tx: Tx, tok: TokenRow, node: Node, step: listeners.Step) -> RunTask | None:
    """The listener that follows ``step`` under a token beside an open user task; None when
    it was the last (the token ends)."""
    assert step.then is not None
    following = step.index + 1
    if following < len(node.listeners_of(step.event)):
        event, then = step.event, step.then
    elif step.then:
        event, then, following = step.then[0], step.then[1:], 0
    else:
        return None
    return listeners.run(tx, tok, node, event, following, then=then, user_task=step.user_task)
