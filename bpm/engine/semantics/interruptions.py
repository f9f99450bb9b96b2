"""Interrupting boundary events: the token leaves its activity for the boundary's path.

The activity's work is cancelled first (its task, its timers, its subprocess body). Then, with
the token still at the activity, a user task's ``delete`` listeners and the activity's
``end`` listeners run, each as a step of its own like every listener; only then does the
token move to the boundary event. Output mappings are not applied: the activity did not
complete.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, RunTask, Tx
from bpm.engine.semantics import listeners
from bpm.engine.semantics.moves import move
from bpm.states import TokenEvent, TokenState
from bpm.store.rows import TokenRow


def leave_for(
    tx: Tx, g: ProcessGraph, tok: TokenRow, boundary: Node, event: TokenEvent, data: Any
) -> NextToken | RunTask:
    """``tok``, whose work at its activity is cancelled, goes to ``boundary``: after the
    activity's interruption listeners, when it has any."""
    node = g.node(tok.node_id)
    events = listeners.interruption_events(node)
    if events:
        return listeners.run(tx, tok, node, events[0], boundary=boundary.id)
    return _to_boundary(tx, tok, boundary, event, data)


def listener_done(tx: Tx, g: ProcessGraph, tok: TokenRow, step: listeners.Step) -> Next:
    """An interruption listener finished: the next one, or the move to the boundary."""
    assert step.boundary is not None
    node = g.node(tok.node_id)
    following = step.index + 1
    if following < len(node.listeners_of(step.event)):
        return listeners.run(tx, tok, node, step.event, following, boundary=step.boundary)
    events = listeners.interruption_events(node)
    later = events[events.index(step.event) + 1 :]
    if later:
        return listeners.run(tx, tok, node, later[0], boundary=step.boundary)
    boundary = g.node(step.boundary)
    event = (
        TokenEvent.TIMER_FIRED
        if boundary.timer is not None
        else TokenEvent.MESSAGE_RECEIVED
        if boundary.message is not None
        else TokenEvent.SIGNAL_RECEIVED
        if boundary.signal is not None
        else TokenEvent.ESCALATED
        if boundary.escalation is not None
        else TokenEvent.TRANSACTION_CANCELLED
        if boundary.cancel
        else TokenEvent.ERROR_CAUGHT
    )
    return _to_boundary(tx, tok, boundary, event, {"boundary": boundary.id, "left": node.id})


def is_interruption(step: listeners.Step | None) -> bool:
    """Whether a listener runs because a boundary event takes its token away (a BPMN error
    it throws then is a failure: the token is already leaving for another path)."""
    return step is not None and step.boundary is not None


def _to_boundary(tx: Tx, tok: TokenRow, boundary: Node, event: TokenEvent, data: Any) -> NextToken:
    moved = move(
        tx,
        tok,
        state=TokenState.ACTIVE,
        event=event,
        node_id=boundary.id,
        via_flow=None,
        data=data,
    )
    return NextToken(moved.id, moved.version, moved)
