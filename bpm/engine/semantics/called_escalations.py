"""An escalation nothing in a called instance catches goes up to the call activity that
started it, when that call activity (its boundary, or an event subprocess or boundary of a
scope around it, or a caller further up the chain) catches the code; otherwise it stays
uncaught, which is not an error.

The called instance's transaction never locks its caller: it records the escalation in its
own history (``ESCALATION_PROPAGATED``) and sends the calling token its job. Caught by an
interrupting catcher up there, the called instance ends CANCELLED (its work is interrupted
with the call activity); caught by a non-interrupting one, it goes on. The calling token's
own transaction then takes each propagated escalation it has not received yet, in order,
and records that it did (``ESCALATION_RECEIVED`` in the called instance's history), so a
nudge lost or sent twice neither loses an escalation nor delivers it twice: the waiting
parents scan finds a calling token whose called instance has more of the first than of the
second.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from bpm.definitions.model import Node, NodeType, ProcessGraph, by_code
from bpm.engine.core.tx import Tx
from bpm.engine.semantics.called_errors import waiting_callers
from bpm.engine.semantics.cancelling import cancel_timers, cancel_token
from bpm.engine.semantics.instance_state import nudge_caller, set_instance_state
from bpm.engine.semantics.moves import move
from bpm.states import LIVE_TOKEN, EngineEvent, InstanceState, TokenEvent, TokenState
from bpm.store import history
from bpm.store.rows import TokenRow


def catcher_from(g: ProcessGraph, node_id: str, code: str) -> Node | None:
    """Who catches ``code`` escalated at activity ``node_id``: its own boundary, then at each
    scope outward the scope's event subprocess, then the boundary on the scope's activity
    (the order ``escalations.throw`` searches in). Reads the graph only."""
    found = g.catcher(node_id, code, lambda node: node.escalation)
    scope = g.node(node_id).scope
    while found is None:
        esps = [g.node(e) for e in g.event_subprocesses.get(scope, ())]
        found = by_code(esps, code, lambda esp: g.trigger_of(esp.id).escalation)
        if found is not None or scope is None:
            break
        found = g.catcher(scope, code, lambda node: node.escalation)
        scope = g.node(scope).scope
    return found


def interrupts(g: ProcessGraph, catcher: Node) -> bool:
    """Whether a catcher ends what escalated to it: a boundary's ``cancelActivity``, an event
    subprocess start's ``isInterrupting``."""
    if catcher.type == NodeType.BOUNDARY:
        return catcher.interrupting
    return g.trigger_of(catcher.id).interrupting


def caller_catch(tx: Tx, instance_id: UUID, code: str) -> bool | None:
    """Whether the chain of callers above ``instance_id`` catches ``code``: None when none
    does, else whether the catcher that does interrupts (reads only)."""
    if tx.graph_for is None:
        return None
    for caller, waiting in waiting_callers(tx, instance_id):
        g = tx.graph_for(caller)
        catcher = catcher_from(g, waiting.node_id, code)
        if catcher is not None:
            return interrupts(g, catcher)
    return None


def send_up(tx: Tx, thrower: TokenRow, code: str) -> bool | None:
    """Escalate ``code`` from ``thrower``'s instance to its caller: None (nothing done) when
    no caller catches it, else whether the catcher interrupts, in which case this instance
    has been cancelled (the thrower ends as having escalated)."""
    interrupting = caller_catch(tx, thrower.instance_id, code)
    if interrupting is None:
        return None
    tx.history.engine(
        instance_id=thrower.instance_id,
        at=tx.now,
        type=EngineEvent.ESCALATION_PROPAGATED,
        node_id=thrower.node_id,
        token_id=thrower.id,
        actor=tx.actor,
        data={"code": code, "interrupting": interrupting},
    )
    if not interrupting:
        nudge_caller(tx, thrower.instance_id)
        return False
    tx.lock_instance(thrower.instance_id)
    reason = f"escalation {code!r} thrown at {thrower.node_id!r} went up to the caller"
    cancel_timers(tx, thrower, reason)
    move(tx, tx.current(thrower), state=TokenState.COMPLETED, event=TokenEvent.ESCALATED)
    for row in tx.tokens_of(thrower.instance_id):
        if row.state in LIVE_TOKEN and row.id != thrower.id:
            cancel_token(tx, tx.current(row), reason)
    set_instance_state(tx, thrower.instance_id, InstanceState.CANCELLED)
    return True


@dataclass(frozen=True)
class Propagated:
    """One escalation a called instance sent up and its caller has not received yet."""

    code: str
    interrupting: bool
    node_id: str | None


_KINDS = (EngineEvent.ESCALATION_PROPAGATED, EngineEvent.ESCALATION_RECEIVED)


def pending(tx: Tx, called: UUID) -> list[Propagated]:
    """The escalations ``called`` sent up that its caller has not received, oldest first
    (each receipt answers the oldest propagated escalation before it)."""
    found: list[Propagated] = []
    received = 0
    for kind, node_id, data in history.engine_events_of(tx.conn, called, _KINDS):
        if kind == EngineEvent.ESCALATION_RECEIVED:
            received += 1
            continue
        data = data or {}
        found.append(Propagated(str(data.get("code")), bool(data.get("interrupting")), node_id))
    return found[received:]


def mark_received(tx: Tx, called: UUID, calling: TokenRow, escalation: Propagated) -> None:
    tx.history.engine(
        instance_id=called,
        at=tx.now,
        type=EngineEvent.ESCALATION_RECEIVED,
        node_id=escalation.node_id,
        token_id=calling.id,
        actor=tx.actor,
        data={"code": escalation.code, "call_activity": calling.node_id},
    )
