"""An instance's message, signal and conditional subscriptions, as Camunda's
``/event-subscription`` lists them: the tokens waiting for a message, a signal or a condition
(receive tasks, message, signal and conditional catch events), the boundary events of those
kinds on the activities tokens work at, the events after an event-based gateway a token
waits at, and the starts of the event subprocesses of the running scopes. Each is derived
from the tokens as they stand, so the list is exactly what a correlation, a throw or a
variable change would find now; its ids are stable for as long as the subscription lasts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.semantics import (
    event_gateways,
    event_subprocesses,
    message_boundaries,
)
from bpm.engine.semantics.tree import Tree
from bpm.errors import NotFound
from bpm.states import LIVE_TOKEN, TokenState, WaitKind
from bpm.store import instances, tokens
from bpm.store.paging import Page
from bpm.store.rows import TokenRow


@dataclass(frozen=True)
class EventSubscriptionQuery:
    """An instance's subscriptions that match every field that is set (bpm derives them
    from one instance's tokens, so the instance is always named)."""

    instance_id: UUID
    event_type: str | None = None
    event_name: str | None = None
    node_id: str | None = None
    token_id: str | None = None


def find(core: EngineCore, q: EventSubscriptionQuery, page: Page) -> list[dict[str, Any]]:
    """In the order ``of_instance`` derives them (``page``'s order is not read)."""
    return _matching(core, q)[page.offset : page.offset + page.limit]


def count(core: EngineCore, q: EventSubscriptionQuery) -> int:
    return len(_matching(core, q))


def _matching(core: EngineCore, q: EventSubscriptionQuery) -> list[dict[str, Any]]:
    wanted = {
        "event_type": q.event_type,
        "event_name": q.event_name,
        "node_id": q.node_id,
        "token_id": q.token_id,
    }
    return [
        s
        for s in of_instance(core, q.instance_id)
        if all(value is None or s[name] == value for name, value in wanted.items())
    ]


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
        elif trigger.signal is not None:
            found.append(_view(sub.host, trigger.id, trigger.signal, EventType.SIGNAL))
        elif trigger.condition is not None:
            found.append(_view(sub.host, trigger.id, None, EventType.CONDITIONAL))
    return found


def _of_token(g: ProcessGraph, tok: TokenRow) -> list[dict[str, Any]]:
    node = g.node(tok.node_id)
    out = []
    waiting = tok.state == TokenState.WAITING
    if waiting and tok.wait_kind == WaitKind.MESSAGE and node.message is not None:
        out.append(_view(tok, node.id, node.message))
    if waiting and tok.wait_kind == WaitKind.CONDITION:
        out.append(_view(tok, node.id, None, EventType.CONDITIONAL))
    for boundary in message_boundaries.armed(g, tok):
        if boundary.message is not None:
            out.append(_view(tok, boundary.id, boundary.message))
        elif boundary.signal is not None:
            out.append(_view(tok, boundary.id, boundary.signal, EventType.SIGNAL))
        elif boundary.condition is not None:
            out.append(_view(tok, boundary.id, None, EventType.CONDITIONAL))
    if waiting and tok.wait_kind == WaitKind.EVENT:
        for event in event_gateways.events_after(g, node):
            if event.message is not None:
                out.append(_view(tok, event.id, event.message))
            elif event.condition is not None:
                out.append(_view(tok, event.id, None, EventType.CONDITIONAL))
    out.extend(_view(tok, n, s, EventType.SIGNAL) for n, s in signal_waits(g, tok))
    return out


def signal_waits(g: ProcessGraph, tok: TokenRow) -> list[tuple[str, str]]:
    """(signal catch event, signal) ``tok`` waits for: at the event, or after the event-based
    gateway it waits at."""
    if tok.state != TokenState.WAITING:
        return []
    node = g.node(tok.node_id)
    if tok.wait_kind == WaitKind.SIGNAL and node.signal is not None:
        return [(node.id, node.signal)]
    if tok.wait_kind == WaitKind.EVENT:
        after = event_gateways.events_after(g, node)
        return [(e.id, e.signal) for e in after if e.signal is not None]
    return []


class EventType(StrEnum):
    """Camunda's ``eventType`` of a subscription."""

    MESSAGE = "message"
    SIGNAL = "signal"
    CONDITIONAL = "conditional"


def _view(
    tok: TokenRow, node_id: str, name: str | None, kind: EventType = EventType.MESSAGE
) -> dict[str, Any]:
    """A subscription; a conditional one has no name (Camunda lists those with
    ``eventType: "conditional"`` and no event name). A message subscription's id keeps the
    form it had before the other kinds."""
    tail = {EventType.MESSAGE: name, EventType.SIGNAL: f"signal:{name}"}.get(kind, str(kind))
    return {
        "id": str(uuid5(NAMESPACE_URL, f"bpm:subscription:{tok.id}:{node_id}:{tail}")),
        "event_type": kind.value,
        "event_name": name,
        "token_id": str(tok.id),
        "instance_id": str(tok.instance_id),
        "node_id": node_id,
        "created_at": tok.updated_at.isoformat(),
    }
