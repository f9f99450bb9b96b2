"""Transaction subprocesses in the JSON format: a ``subProcess`` with ``"transaction": true``,
an ``endEvent`` with ``"cancel": true`` inside one, and a ``boundaryEvent`` with
``"cancel": true`` on one.

A transaction is a subprocess with a flag, not a node type of its own: it runs, nests, takes
boundaries and keeps compensation records exactly as a subprocess does, and only the cancel
end event inside it behaves differently (``bpm.engine.semantics.transactions``). The rules
that need the whole graph (where a cancel event may be, one cancel boundary per transaction)
are checked here, after the attachments, and name the element as Camunda 7 does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import Node, NodeType
from bpm.errors import InvalidDefinition

#: The keys an end event or a boundary event may not have next to ``cancel``: each is
#: another trigger or result of the same event.
_OTHER_END = ("terminate", "error", "compensate", "escalation")
_OTHER_BOUNDARY = ("timer", "error", "message", "escalation")


def _flag(raw: Mapping[str, Any], key: str, where: str, node_id: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise InvalidDefinition(f"{where}: {key!r} must be true or false", node_id)
    return value


def transaction_flag(raw: Mapping[str, Any], where: str, node_id: str) -> bool:
    """A subprocess's ``transaction``; an event subprocess or a multi-instance subprocess
    cannot be one here (docs/bpmn.md)."""
    flag = _flag(raw, "transaction", where, node_id)
    if flag and raw.get("triggeredByEvent"):
        raise InvalidDefinition(f"{where}: an event subprocess cannot be a transaction", node_id)
    if flag and raw.get("multiInstance") is not None:
        raise InvalidDefinition(
            f"{where}: a multi-instance transaction is not supported; put the transaction "
            "inside a multi-instance subprocess",
            node_id,
        )
    return flag


def cancel_end(raw: Mapping[str, Any], where: str, node_id: str) -> bool:
    """An end event's ``cancel``: the only thing it does."""
    cancel = _flag(raw, "cancel", where, node_id)
    if cancel and any(raw.get(key) for key in _OTHER_END):
        raise InvalidDefinition(
            f"{where}: a cancel end event cannot also terminate, throw, compensate or escalate",
            node_id,
        )
    return cancel


def cancel_boundary(
    raw: Mapping[str, Any], where: str, node_id: str, incoming: tuple[str, ...]
) -> dict[str, Any]:
    """A boundary event with ``cancel``: always interrupting, with no other trigger (the
    other boundary events are ``boundaries.boundary_fields``')."""
    attached = raw.get("attachedTo")
    if not isinstance(attached, str):
        raise InvalidDefinition(f"{where}: needs 'attachedTo', the id of a transaction", node_id)
    if incoming:
        raise InvalidDefinition(f"{where}: a boundary event cannot have incoming flows", node_id)
    if raw.get("cancel") is not True:
        raise InvalidDefinition(f"{where}: 'cancel' can only be true", node_id)
    if any(key in raw for key in _OTHER_BOUNDARY):
        raise InvalidDefinition(
            f"{where}: a cancel boundary event has no timer, error, message or escalation",
            node_id,
        )
    if raw.get("interrupting", True) is not True:
        raise InvalidDefinition(
            f"{where}: a cancel boundary event is always interrupting; remove "
            "'interrupting': false",
            node_id,
        )
    return {"cancel": True, "interrupting": True, "attached_to": attached}


def check_transactions(
    nodes: Mapping[str, Node], boundaries: Mapping[str, tuple[str, ...]]
) -> None:
    """Cancel end events only directly inside a transaction, which then has a cancel
    boundary; cancel boundaries only on a transaction, at most one each."""
    for node in nodes.values():
        if node.type is NodeType.BOUNDARY and node.cancel:
            host = nodes[node.attached_to or ""]
            if not host.transaction:
                raise InvalidDefinition(
                    f"node {node.id!r} (boundaryEvent): a cancel boundary event can only be "
                    f"attached to a transaction, not to {host.id!r}",
                    node.id,
                )
            first = cancel_boundary_of(nodes, boundaries, host.id)
            if first is not None and first.id != node.id:
                raise InvalidDefinition(
                    f"node {node.id!r} (boundaryEvent): transaction {host.id!r} already has "
                    f"the cancel boundary event {first.id!r}; keep one",
                    node.id,
                )
        elif node.type is NodeType.END and node.cancel:
            scope = nodes.get(node.scope or "")
            if scope is None or not scope.transaction:
                raise InvalidDefinition(
                    f"node {node.id!r} (endEvent): a cancel end event is only allowed "
                    "inside a transaction",
                    node.id,
                )
            if cancel_boundary_of(nodes, boundaries, scope.id) is None:
                raise InvalidDefinition(
                    f"node {node.id!r} (endEvent): transaction {scope.id!r} has a cancel end "
                    "event but no cancel boundary event; attach one to the transaction",
                    node.id,
                )


def cancel_boundary_of(
    nodes: Mapping[str, Node], boundaries: Mapping[str, tuple[str, ...]], transaction: str
) -> Node | None:
    """The cancel boundary event on ``transaction``, if it has one."""
    for b in boundaries.get(transaction, ()):
        if nodes[b].cancel:
            return nodes[b]
    return None
