"""The processes a case deploys, as compiled: node types and what each node waits for, under
the names the manifests use (``X`` for the case's own process, ``P/X`` for another)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bpm.definitions.model import SCOPES

#: Left out of the completion log and of the wait states (the peers' logs leave them out).
NOT_ACTIVITIES = {
    "startEvent",
    "exclusiveGateway",
    "parallelGateway",
    "inclusiveGateway",
    "eventBasedGateway",
}
#: Scopes never appear among the wait states (README): the engine's scope types, and the
#: elements the README names by their BPMN names.
SCOPE_TYPES = {*SCOPES, "subProcess", "transaction", "callActivity"}


def _walk(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        yield node
        yield from _walk(node.get("nodes", []))


@dataclass
class Model:
    """Every process of the files a case deploys; ``main`` is the case's ``process_id``."""

    main: str
    nodes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: process -> (source, target) of every flow, subprocesses' included
    flows: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def add(self, documents: list[dict[str, Any]]) -> None:
        for doc in documents:
            self.nodes[str(doc["key"])] = {n["id"]: n for n in _walk(doc["nodes"])}
            scopes = [doc, *(n for n in _walk(doc["nodes"]) if "flows" in n)]
            self.flows[str(doc["key"])] = [
                (f["source"], f["target"]) for scope in scopes for f in scope.get("flows", [])
            ]

    def after(self, process: str, node_id: str) -> list[str]:
        """The labels of the nodes ``node_id``'s flows lead to."""
        return [
            self.label(process, target)
            for source, target in self.flows.get(process, [])
            if source == node_id
        ]

    def label(self, process: str, node_id: str) -> str:
        """How the manifests name node ``node_id`` of ``process``."""
        return node_id if process == self.main else f"{process}/{node_id}"

    def split(self, label: str) -> tuple[str, str]:
        """``P/X`` -> (P, X); a bare ``X`` is a node of the case's own process."""
        process, _, node_id = label.rpartition("/")
        return (process, node_id) if process else (self.main, label)

    def node(self, label: str) -> dict[str, Any] | None:
        process, node_id = self.split(label)
        return self.nodes.get(process, {}).get(node_id)

    def type(self, label: str) -> str:
        node = self.node(label)
        return str(node["type"]) if node is not None else "?"

    def handlers(self) -> set[str]:
        return {
            str(n["handler"])
            for nodes in self.nodes.values()
            for n in nodes.values()
            if "handler" in n
        }

    def message_starts(self, message: str) -> list[str]:
        """The start events (labels) that start an instance on ``message``."""
        return [
            self.label(process, node_id)
            for process, nodes in self.nodes.items()
            for node_id, node in nodes.items()
            if node["type"] == "startEvent" and node.get("message") == message
        ]
