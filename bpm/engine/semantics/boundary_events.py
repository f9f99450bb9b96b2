"""A boundary event that fires on an activity a token is working at (a timer's, a message's):
interrupting, the activity's work is cancelled and the token takes the boundary's path;
non-interrupting, a new token takes it beside the activity, which stays open."""

from __future__ import annotations

from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, Tx
from bpm.engine.semantics import interruptions
from bpm.engine.semantics.cancelling import (
    cancel_called,
    cancel_descendants,
    cancel_task,
    cancel_timers,
)
from bpm.engine.semantics.moves import spawn_beside
from bpm.states import TokenEvent, WaitKind
from bpm.store import tasks
from bpm.store.rows import TokenRow


def interrupt(
    tx: Tx, g: ProcessGraph, tok: TokenRow, boundary: Node, event: TokenEvent, what: str
) -> Next:
    """Leave the activity: its task (even one a worker holds) or its subprocess tokens are
    cancelled, its timers disarmed, and the token takes the boundary's path (after the
    activity's interruption listeners)."""
    reason = f"interrupted by {what} {boundary.id!r}"
    task = tasks.open_of_token(tx.conn, tok.id)
    if task is not None:
        cancel_task(tx, task.id, reason)
    if g.node(tok.node_id).is_scope:
        cancel_descendants(tx, tok, reason)
    if tok.wait_kind == WaitKind.CALLED:
        cancel_called(tx, tok, reason)
    cancel_timers(tx, tok, reason)
    data = {"boundary": boundary.id, "left": tok.node_id}
    return interruptions.leave_for(tx, g, tok, boundary, event, data)


def spawn(tx: Tx, tok: TokenRow, boundary: Node) -> NextToken:
    """Non-interrupting: a new token takes the boundary's path; the activity stays open."""
    spawned = spawn_beside(tx, tok, boundary.id, {"boundary": boundary.id})
    return NextToken(spawned.id, 0)
