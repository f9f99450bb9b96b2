"""An instance's message and conditional subscriptions, as Camunda's ``/event-subscription``
lists them: the tokens waiting for a message or a condition (receive tasks, message and
conditional catch events), the message and conditional boundary events on the activities
tokens work at, the message and conditional events after an event-based gateway a token
waits at, and the message and conditional starts of the event subprocesses of the running
scopes. Each is derived from the tokens as they stand, so the list is exactly what a
correlation would find now; its ids are stable for as long as the subscription lasts."""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.semantics import (
    conditions,
    event_gateways,
    event_subprocesses,
    message_boundaries,
)
from bpm.engine.semantics.tree import Tree
from bpm.errors import NotFound
from bpm.states import LIVE_TOKEN, TokenState, WaitKind
from bpm.store import instances, tokens
from bpm.store.rows import TokenRow


def of_instance(core: EngineCore, instance_id: UUID) -> list[dict[str, Any]]:
    with core.db.transaction() as conn:
        row = instances.get(conn, instance_id)
        if row is None:
            raise NotFound(f"instance {instance_id} does not exist")
        graph = core.graph(row.process_def_id, conn)
        rows = tokens.of_instance(conn, instance_id)
    live = [t for t in rows if t.state in LIVE_TOKEN]
    found = [s for tok in live for s in _of_token(graph, tok)]
    for sub in event_subprocesses.subscriptions(graph, Tree(rows)):
        trigger = graph.trigger_of(sub.esp.id)
        if trigger.message is not None:
            found.append(_view(sub.host, trigger.id, trigger.message))
        elif trigger.condition is not None:
            found.append(_view(sub.host, trigger.id, None))
    return found


def _of_token(g: ProcessGraph, tok: TokenRow) -> list[dict[str, Any]]:
    node = g.node(tok.node_id)
    out = []
    waiting = tok.state == TokenState.WAITING
    if waiting and tok.wait_kind == WaitKind.MESSAGE and node.message is not None:
        out.append(_view(tok, node.id, node.message))
    if waiting and tok.wait_kind == WaitKind.CONDITION:
        out.append(_view(tok, node.id, None))
    for boundary in message_boundaries.listening(g, tok):
        assert boundary.message is not None
        out.append(_view(tok, boundary.id, boundary.message))
    if g.has_conditions and message_boundaries.at_work(g, tok):
        out += [_view(tok, b.id, None) for b in conditions.boundaries(g, tok.node_id)]
    if waiting and tok.wait_kind == WaitKind.EVENT:
        for event in event_gateways.events_after(g, node):
            if event.message is not None or event.condition is not None:
                out.append(_view(tok, event.id, event.message))
    return out


def _view(tok: TokenRow, node_id: str, message: str | None) -> dict[str, Any]:
    """A message subscription (``message``), or a conditional one (None: Camunda lists
    those with ``eventType: "conditional"`` and no event name)."""
    key = message if message is not None else "conditional"
    return {
        "id": str(uuid5(NAMESPACE_URL, f"bpm:subscription:{tok.id}:{node_id}:{key}")),
        "event_type": "message" if message is not None else "conditional",
        "event_name": message,
        "token_id": str(tok.id),
        "instance_id": str(tok.instance_id),
        "node_id": node_id,
        "created_at": tok.updated_at.isoformat(),
    }
