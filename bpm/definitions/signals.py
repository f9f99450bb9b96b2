"""Which signals a definition subscribes to, and where: the rows a deploy writes into
``definition_signal_subscriptions`` so a throw finds every recipient by name in SQL.

A subscription in Camunda 7 is a row made when a token reaches its event; in bpm it is the
token itself (as for messages), and this table says which tokens count: one WAITING at a
signal catch, at an activity with a signal boundary, at an event-based gateway before a
signal event, at a subprocess with a signal event subprocess; the root token for the
process's own signal event subprocess; and the definition itself for a signal start event.
"""

from __future__ import annotations

from bpm.definitions.model import NodeType, ProcessGraph
from bpm.states import SignalTarget

Subscription = tuple[str, str, SignalTarget]


def subscriptions(g: ProcessGraph) -> list[Subscription]:
    """(signal name, node id, target) for each place of ``g`` a signal reaches."""
    out: set[Subscription] = set()
    for node in g.nodes.values():
        if node.type is NodeType.SIGNAL and node.signal is not None:
            out.add((node.signal, node.id, SignalTarget.NODE))
            for flow in node.incoming:  # the event-based gateway before it, if one
                source = g.node(g.flows[flow].source)
                if source.type is NodeType.EVENT_GATEWAY:
                    out.add((node.signal, source.id, SignalTarget.NODE))
        elif node.type is NodeType.BOUNDARY and node.signal is not None:
            assert node.attached_to is not None
            out.add((node.signal, node.attached_to, SignalTarget.NODE))
        elif node.type is NodeType.START and node.signal is not None:
            host = g.node(node.scope) if node.scope is not None else None
            if host is None:
                out.add((node.signal, node.id, SignalTarget.START))
            elif host.scope is None:
                out.add((node.signal, host.id, SignalTarget.ROOT))
            else:
                out.add((node.signal, host.scope, SignalTarget.NODE))
    return sorted(out)
