"""What a fired timer does: an intermediate timer event moves on; an interrupting boundary
leaves its activity; a non-interrupting one starts a path beside it."""

from __future__ import annotations

from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import boundary_events, waits
from bpm.engine.semantics.nodes import leave
from bpm.states import TokenEvent, TokenState
from bpm.store.rows import TokenRow


def still_waiting(node: Node, tok: TokenRow | None) -> bool:
    where = node.id if node.type is NodeType.TIMER else node.attached_to
    return tok is not None and tok.state == TokenState.WAITING and tok.node_id == where


def wake(tx: Tx, g: ProcessGraph, node: Node, tok: TokenRow) -> Next:
    if node.type is NodeType.TIMER:
        return leave(tx, g, tok, node)
    if node.interrupting:
        return boundary_events.interrupt(tx, g, tok, node, TokenEvent.TIMER_FIRED, "timer")
    return _spawn(tx, tok, node)


def _spawn(tx: Tx, tok: TokenRow, boundary: Node) -> Next:
    """Non-interrupting: a new token takes the boundary's path; the activity stays open, and
    a cycle arms its next tick."""
    spawned = boundary_events.spawn(tx, tok, boundary)
    if boundary.timer is not None and boundary.timer.kind == "cycle":
        waits.rearm_cycle(tx, tok, boundary)
    return spawned
