"""What a fired timer does: an intermediate timer event moves on; an interrupting boundary
leaves its activity; a non-interrupting one starts a path beside it."""

from __future__ import annotations

from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, Tx
from bpm.engine.semantics import interruptions, waits
from bpm.engine.semantics.cancelling import (
    cancel_called,
    cancel_descendants,
    cancel_task,
    cancel_timers,
)
from bpm.engine.semantics.moves import spawn_beside
from bpm.engine.semantics.nodes import leave
from bpm.states import TokenEvent, TokenState, WaitKind
from bpm.store import tasks
from bpm.store.rows import TokenRow


def still_waiting(node: Node, tok: TokenRow | None) -> bool:
    where = node.id if node.type is NodeType.TIMER else node.attached_to
    return tok is not None and tok.state == TokenState.WAITING and tok.node_id == where


def wake(tx: Tx, g: ProcessGraph, node: Node, tok: TokenRow) -> Next:
    if node.type is NodeType.TIMER:
        return leave(tx, g, tok, node)
    if node.interrupting:
        return _interrupt(tx, g, tok, node)
    return _spawn(tx, tok, node)


def _interrupt(tx: Tx, g: ProcessGraph, tok: TokenRow, boundary: Node) -> Next:
    """Leave the activity: its task (even one a worker holds) or its subprocess tokens are
    cancelled, its other timers disarmed, and the token takes the boundary's path (after
    the activity's interruption listeners)."""
    reason = f"interrupted by timer {boundary.id!r}"
    task = tasks.open_of_token(tx.conn, tok.id)
    if task is not None:
        cancel_task(tx, task.id, reason)
    if g.node(tok.node_id).is_scope:
        cancel_descendants(tx, tok, reason)
    if tok.wait_kind == WaitKind.CALLED:
        cancel_called(tx, tok, reason)
    cancel_timers(tx, tok, reason)
    data = {"boundary": boundary.id, "left": tok.node_id}
    return interruptions.leave_for(tx, g, tok, boundary, TokenEvent.TIMER_FIRED, data)


def _spawn(tx: Tx, tok: TokenRow, boundary: Node) -> Next:
    """Non-interrupting: a new token takes the boundary's path; the activity stays open, and
    a cycle arms its next tick."""
    spawned = spawn_beside(tx, tok, boundary.id, {"boundary": boundary.id})
    if boundary.timer is not None and boundary.timer.kind == "cycle":
        waits.rearm_cycle(tx, tok, boundary)
    return NextToken(spawned.id, 0)
