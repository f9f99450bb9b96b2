"""Where a message that names no instance may be waited for: the nodes of a definition at
which a token listens for it (a receive task or message catch event, an activity with a
message boundary event, an event-based gateway before a message event, a subprocess whose
event subprocess starts on it), or anywhere, for an event subprocess of the process itself.

A correlation with neither business key nor instance id goes to the one instance that waits
for the message, as in Camunda 7 (several are ambiguous unless the caller takes them all).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from uuid import UUID

from bpm.definitions.model import NodeType, ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Tx
from bpm.store import message_waits
from bpm.store.rows import InstanceRow


@dataclass(frozen=True)
class Listeners:
    """The nodes a token of one definition stands at to listen for a message; ``anywhere``:
    every live instance listens (a process-level event subprocess starts on it)."""

    nodes: frozenset[str]
    anywhere: bool


def listeners(g: ProcessGraph, message: str) -> Listeners:
    nodes: set[str] = set()
    anywhere = False
    triggers = {
        g.trigger_of(e).id: scope for scope, ids in g.event_subprocesses.items() for e in ids
    }
    for node in g.nodes.values():
        if node.type is NodeType.EVENT_GATEWAY:
            if any(g.node(f.target).message == message for f in g.outgoing(node.id)):
                nodes.add(node.id)
        elif node.message != message:
            continue
        elif node.attached_to is not None:
            nodes.add(node.attached_to)
        elif node.id in triggers:
            scope = triggers[node.id]
            anywhere = anywhere or scope is None
            nodes.update(() if scope is None else (scope,))
        elif node.type is not NodeType.START:
            nodes.add(node.id)
    return Listeners(frozenset(nodes), anywhere)


def instances_listening(
    core: EngineCore, tx: Tx, message: str, keys: Collection[str] | None, limit: int
) -> list[InstanceRow]:
    """The live instances that may wait for ``message`` now (a superset, oldest first)."""
    at_nodes: dict[UUID, frozenset[str]] = {}
    anywhere: list[UUID] = []
    for def_id in message_waits.definition_ids(tx.conn):
        found = listeners(core.graph(def_id, tx.conn), message)
        if found.anywhere:
            anywhere.append(def_id)
        elif found.nodes:
            at_nodes[def_id] = found.nodes
    return message_waits.instances(tx.conn, at_nodes, anywhere, keys=keys, limit=limit)
