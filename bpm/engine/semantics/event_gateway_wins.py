"""The event that wins at an event-based gateway (``event_gateways``): a timer that fires,
a message correlated or a condition come true first moves the gateway's token to it under
its version, cancels the other timers, and leaves the event by its flow.

Apart from ``event_gateways`` because leaving goes through ``nodes``, which reaches the
gateway through ``event_gateways``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics.cancelling import cancel_timers
from bpm.engine.semantics.event_gateways import GatewaySubscription
from bpm.engine.semantics.message_arrivals import arrived, signalled
from bpm.engine.semantics.moves import move
from bpm.engine.semantics.nodes import leave
from bpm.states import TokenEvent, TokenState
from bpm.store.rows import TokenRow


def message_won(
    tx: Tx, g: ProcessGraph, sub: GatewaySubscription, message: str, values: Mapping[str, Any]
) -> Next:
    tok = tx.current(sub.token)
    arrived(tx, g, tok, sub.event.id, message, values)
    return _won(tx, g, tok, sub.event, TokenEvent.MESSAGE_RECEIVED)


def condition_won(tx: Tx, g: ProcessGraph, tok: TokenRow, event: Node) -> Next:
    return _won(tx, g, tok, event, TokenEvent.CONDITION_MET)


def signal_won(
    tx: Tx, g: ProcessGraph, tok: TokenRow, event: Node, signal: str, values: Mapping[str, Any]
) -> Next:
    tok = tx.current(tok)
    signalled(tx, g, tok, event.id, signal, values)
    return _won(tx, g, tok, event, TokenEvent.SIGNAL_RECEIVED)


def timer_won(tx: Tx, g: ProcessGraph, tok: TokenRow, timer_event: Node) -> Next:
    return _won(tx, g, tok, timer_event, TokenEvent.TIMER_FIRED)


def _won(tx: Tx, g: ProcessGraph, tok: TokenRow, event: Node, how: TokenEvent) -> Next:
    """``event`` came first: the other timers go, the token passes the event."""
    gateway = tok.node_id
    cancel_timers(tx, tok, reason=f"{event.id!r} came first at {gateway!r}")
    flow = next(f for f in g.outgoing(gateway) if f.target == event.id)
    at_event = move(
        tx,
        tx.current(tok),
        state=TokenState.ACTIVE,
        event=how,
        node_id=event.id,
        via_flow=flow.id,
        data={"gateway": gateway, "won": event.id},
    )
    return leave(tx, g, at_event, event)
