"""Nodes no token can reach, in an imported BPMN process: left out, as Camunda 7 leaves them.

A JSON definition with a node no start event leads to is refused (the node is a mistake).
Camunda 7 deploys such a BPMN model and the node simply never runs: a modeler leaves a task
drawn beside the flow, or an older path disconnected. The importer does the same: it drops
every node the validator finds unreachable (and the flows and boundary events that hang on
it), lists each as ignored, and validates again. One case stays refused: an unreachable node
whose flow enters a reachable parallel or inclusive join, where Camunda 7 would wait for
that flow for ever; bpm refuses the model rather than run it differently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bpm.definitions.bpmn_reader import problems_of
from bpm.errors import InvalidDefinition

#: The validator's words for a node no start event leads to (``parse/graph.py``).
UNREACHABLE = "unreachable from the start event of its scope"
_JOINS = frozenset({"parallelGateway", "inclusiveGateway"})
#: At most this many rounds of validating and dropping (each drops what it found).
_ROUNDS = 200


def drop_unreachable(
    doc: dict[str, Any], compile_doc: Callable[[Any], Any], *, allow: bool = True
) -> tuple[list[str], InvalidDefinition | None]:
    """Validate ``doc`` once, and while ``allow``, drop its unreachable nodes (in place) and
    validate again; returns the ids dropped, in the order found, and what the last
    validation refused (None: the process is valid), so the caller validates no more. Stops
    at the first round whose problems are not (only) unreachable nodes, or whose unreachable
    node feeds a join."""
    dropped: list[str] = []
    for round_ in range(_ROUNDS):
        try:
            compile_doc(doc)
            return dropped, None
        except InvalidDefinition as exc:
            found = {
                element
                for text in problems_of(exc)
                if UNREACHABLE in text and (element := exc.element_of(text)) is not None
            }
            if not allow or not found or _feeds_a_join(doc, found) or round_ == _ROUNDS - 1:
                return dropped, exc
        dropped += sorted(_drop(doc, found))
    raise AssertionError("every round returns or drops")


def _scopes(container: dict[str, Any]) -> list[dict[str, Any]]:
    """The process and every subprocess in it: each holds ``nodes`` and ``flows``."""
    out = [container]
    for node in container.get("nodes", []):
        if isinstance(node, dict) and isinstance(node.get("nodes"), list):
            out += _scopes(node)
    return out


def _feeds_a_join(doc: dict[str, Any], ids: set[str]) -> bool:
    kinds = {
        n.get("id"): n.get("type")
        for scope in _scopes(doc)
        for n in scope.get("nodes", [])
        if isinstance(n, dict)
    }
    return any(
        f.get("source") in ids and f.get("target") not in ids and kinds.get(f["target"]) in _JOINS
        for scope in _scopes(doc)
        for f in scope.get("flows", [])
        if isinstance(f, dict)
    )


def _drop(doc: dict[str, Any], ids: set[str]) -> set[str]:
    """Remove the nodes, the boundary events on them, and every flow touching either;
    returns the ids of the nodes removed."""
    ids = ids | {
        n["id"]
        for scope in _scopes(doc)
        for n in scope.get("nodes", [])
        if isinstance(n, dict) and n.get("attachedTo") in ids and isinstance(n.get("id"), str)
    }
    for scope in _scopes(doc):
        scope["nodes"] = [
            n for n in scope.get("nodes", []) if not (isinstance(n, dict) and n.get("id") in ids)
        ]
        scope["flows"] = [
            f
            for f in scope.get("flows", [])
            if not (isinstance(f, dict) and (f.get("source") in ids or f.get("target") in ids))
        ]
    return ids
