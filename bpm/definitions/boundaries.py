"""Boundary events: the checks that need the whole graph, and the lookup the engine uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import Node, NodeType
from bpm.errors import InvalidDefinition

ATTACHABLE = frozenset({NodeType.SERVICE_TASK, NodeType.SUBPROCESS})


def boundary_fields(raw: Mapping[str, Any], where: str, node_id: str,
                    incoming: tuple[str, ...]) -> dict[str, Any]:
    """What a boundary event catches; error boundaries only, and always interrupting."""
    if "timer" in raw:
        raise InvalidDefinition(f"{where}: timer boundary events are not supported yet", node_id)
    code = raw.get("error")
    if not isinstance(code, str) or not code:
        raise InvalidDefinition(f"{where}: needs 'error', the error code it catches, or '*' "
                                f"for any", node_id)
    if raw.get("interrupting", True) is not True:
        raise InvalidDefinition(f"{where}: error boundary events are always interrupting",
                                node_id)
    attached = raw.get("attachedTo")
    if not isinstance(attached, str):
        raise InvalidDefinition(f"{where}: needs 'attachedTo', the id of a task or subProcess",
                                node_id)
    if incoming:
        raise InvalidDefinition(f"{where}: a boundary event cannot have incoming flows",
                                node_id)
    return {"attached_to": attached, "catches": code}


def check_attachments(nodes: Mapping[str, Node]) -> dict[str, tuple[str, ...]]:
    """Every boundary sits on a service task or subprocess of its own scope; returns the
    boundary ids per activity, and refuses two boundaries catching the same code there."""
    out: dict[str, list[str]] = {}
    for node in nodes.values():
        if node.type is not NodeType.BOUNDARY:
            continue
        where = f"node {node.id!r} (boundaryEvent)"
        host = nodes.get(node.attached_to or "")
        if host is None or host.scope != node.scope:
            raise InvalidDefinition(f"{where}: attachedTo {node.attached_to!r} is not a node "
                                    f"of its scope", node.id)
        if host.type not in ATTACHABLE:
            raise InvalidDefinition(f"{where}: can only be attached to a serviceTask or a "
                                    f"subProcess, not a {host.type.value}", node.id)
        for other in out.get(host.id, []):
            if nodes[other].catches == node.catches:
                raise InvalidDefinition(f"{where}: {other!r} on {host.id!r} already catches "
                                        f"{node.catches!r}", node.id)
        out.setdefault(host.id, []).append(node.id)
    return {host: tuple(ids) for host, ids in out.items()}
