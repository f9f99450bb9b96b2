"""The rules of an event-based gateway that look across nodes: its flows lead to the events
it waits for (a timer, message, signal or conditional catch event, or a receive task),
unconditionally, and each such event is entered only from it."""

from __future__ import annotations

from collections.abc import Mapping

from bpm.definitions.model import Flow, Node, NodeType
from bpm.errors import InvalidDefinition

_CATCHES = (
    NodeType.TIMER,
    NodeType.MESSAGE,
    NodeType.SIGNAL,
    NodeType.RECEIVE_TASK,
    NodeType.CONDITIONAL,
)


def check(nodes: Mapping[str, Node], flows: Mapping[str, Flow]) -> None:
    for node in nodes.values():
        if node.type is not NodeType.EVENT_GATEWAY:
            continue
        where = f"node {node.id!r} (eventBasedGateway)"
        if len(node.outgoing) < 2:
            raise InvalidDefinition(
                f"{where}: needs at least two outgoing flows, one to each event it waits for",
                node.id,
            )
        for flow_id in node.outgoing:
            flow = flows[flow_id]
            target = nodes[flow.target]
            if flow.condition is not None:
                raise InvalidDefinition(
                    f"{where}: flow {flow.id!r} has a condition; the event that comes first "
                    f"decides, not a condition",
                    flow.id,
                )
            if target.type not in _CATCHES:
                raise InvalidDefinition(
                    f"{where}: flow {flow.id!r} leads to {target.type.value} {target.id!r}; "
                    f"an event-based gateway leads to timer, message, signal or conditional "
                    f"catch events or receive tasks",
                    target.id,
                )
            if len(target.incoming) != 1:
                raise InvalidDefinition(
                    f"node {target.id!r} ({target.type.value}): after the event-based gateway "
                    f"{node.id!r} it has no other incoming flow",
                    target.id,
                )
