"""Message boundary events: while a token works at an activity (its task, its user task, its
receive task, its call, its subprocess or multi-instance body), a message boundary event on
the activity listens for its message; a correlation to the instance that no waiting token
takes first fires it, interrupting the activity or starting a path beside it.

The subscription is the token itself, read in the correlating transaction: it exists exactly
while the token waits at the activity, so it is armed when the activity starts and gone when
it ends, with nothing to clean up; ``bpm show`` lists it (``subscriptions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bpm.definitions.model import ACTIVITIES, Node, ProcessGraph
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import boundary_events
from bpm.engine.semantics.message_arrivals import arrived
from bpm.states import TokenEvent, TokenState, WaitKind
from bpm.store.rows import TokenRow

#: What a token at an activity waits for while the activity runs.
_WORKING = frozenset(
    {WaitKind.TASK, WaitKind.USER, WaitKind.MESSAGE, WaitKind.CALLED, WaitKind.CHILDREN}
)


@dataclass(frozen=True)
class BoundarySubscription:
    """``boundary`` on the activity ``token`` works at waits for the message."""

    token: TokenRow
    boundary: Node

    @property
    def instance_id(self) -> UUID:
        return self.token.instance_id


def listening(g: ProcessGraph, tok: TokenRow) -> list[Node]:
    """The message boundary events that listen while ``tok`` is where it is."""
    return [b for b in armed(g, tok) if b.message is not None]


def armed(g: ProcessGraph, tok: TokenRow) -> list[Node]:
    """The boundary events of the activity ``tok`` works at, while it works there (none for
    a multi-instance iteration: its body holds them); signal boundaries ask this too."""
    if not at_work(g, tok):
        return []
    return [g.node(b) for b in g.boundaries.get(tok.node_id, ())]


def at_work(g: ProcessGraph, tok: TokenRow) -> bool:
    """Whether ``tok`` works at an activity, so the boundary events on it listen (message,
    signal and conditional alike)."""
    node = g.node(tok.node_id)
    return not (
        node.type not in ACTIVITIES
        or tok.state != TokenState.WAITING
        or tok.wait_kind not in _WORKING
        or tok.scope_id == tok.node_id  # a multi-instance iteration: its body listens
        or (tok.wait_kind == WaitKind.CHILDREN and not node.is_scope)
    )


def subscriptions(
    g: ProcessGraph, tokens: Iterable[TokenRow], message: str
) -> list[BoundarySubscription]:
    return [
        BoundarySubscription(tok, boundary)
        for tok in tokens
        for boundary in listening(g, tok)
        if boundary.message == message
    ]


def fire(
    tx: Tx, g: ProcessGraph, sub: BoundarySubscription, message: str, values: Mapping[str, Any]
) -> Next:
    """The message arrived: its variables are written, then the boundary fires."""
    tok = tx.current(sub.token)
    arrived(tx, g, tok, sub.boundary.id, message, values)
    if sub.boundary.interrupting:
        return boundary_events.interrupt(
            tx, g, tok, sub.boundary, TokenEvent.MESSAGE_RECEIVED, "message"
        )
    return boundary_events.spawn(tx, tok, sub.boundary)  # moves ``tok``: a racer conflicts
