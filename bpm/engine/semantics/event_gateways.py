"""Event-based gateways: the token waits at the gateway (WAITING for EVENT) for the first of
the events its flows lead to; that event wins and the others are gone in the same
transaction.

On arrival a conditional event after it whose condition already holds wins at once;
otherwise the timers of the timer events after it are scheduled, owned by the gateway's
token; the messages of the message events (and receive tasks) after it are listened for
through the token itself, read by a correlation in its own transaction. Whichever comes
first, a timer firing or a message correlated, moves the token under its version to the
event that won, cancels the other timers, and leaves that event by its flow; a racing second
event finds the token moved and backs off (the timer is retired, the message finds nothing
waiting).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import conditions, waits
from bpm.engine.semantics.moves import move, take
from bpm.states import TokenEvent, TokenState, WaitKind
from bpm.store.rows import TokenRow

#: The events an event-based gateway's flows may lead to (checked at deploy).
CATCHES = frozenset(
    {NodeType.TIMER, NodeType.MESSAGE, NodeType.SIGNAL, NodeType.RECEIVE_TASK, NodeType.CONDITIONAL}
)


@dataclass(frozen=True)
class GatewaySubscription:
    """``event`` after the gateway ``token`` waits at listens for the message."""

    token: TokenRow
    event: Node

    @property
    def instance_id(self) -> UUID:
        return self.token.instance_id


def wait(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """Wait at the gateway; a conditional event after it whose condition already holds
    wins at once (the token goes to it and passes it: it is evaluated there again)."""
    events = events_after(g, node)
    if g.has_conditions:
        first = conditions.first_after_gateway(tx, g, tok, events)
        if isinstance(first, Node):
            flow = next(f for f in g.outgoing(node.id) if f.target == first.id)
            return take(tx, tok, flow)
        if first:
            return None  # the condition could not be evaluated: the token failed
    waiting = move(
        tx, tok, state=TokenState.WAITING, event=TokenEvent.WAITING, wait_kind=WaitKind.EVENT
    )
    for event in events:
        if event.type is NodeType.TIMER and not waits.schedule(tx, waiting, event, node):
            return None  # the timer could not be computed: the token failed with an incident
    return None


def events_after(g: ProcessGraph, gateway: Node) -> list[Node]:
    return [g.node(flow.target) for flow in g.outgoing(gateway.id)]


def subscriptions(
    g: ProcessGraph, tokens: Iterable[TokenRow], message: str
) -> list[GatewaySubscription]:
    return [
        GatewaySubscription(tok, event)
        for tok in tokens
        if tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.EVENT
        for event in events_after(g, g.node(tok.node_id))
        if event.message == message
    ]


def waits_here(g: ProcessGraph, tok: TokenRow | None, event: Node) -> bool:
    """Whether ``tok`` still waits at the gateway before ``event``."""
    return (
        tok is not None
        and tok.state == TokenState.WAITING
        and tok.wait_kind == WaitKind.EVENT
        and event in events_after(g, g.node(tok.node_id))
    )
