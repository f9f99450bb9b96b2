"""Reading a deployed definition: what it declares for people and tools (properties, forms,
documentation, who may start it), node by node. The API behind ``bpm definition``."""

from __future__ import annotations

from typing import Any

from bpm.definitions.parse.keys import PROCESS_METADATA
from bpm.engine.core.engine_core import EngineCore
from bpm.errors import UnknownProcess
from bpm.store import definitions
from bpm.store.rows import DefinitionRow

#: Node keys a view shows besides id, type and name: what they declare, not their wiring.
_NODE_KEYS = (
    "properties",
    "documentation",
    "handler",
    "topic",
    "fields",
    "resultVariable",
    "retry",
    "timeout",
    "priority",
    "assignee",
    "candidate_groups",
    "candidate_users",
    "due_date",
    "follow_up_date",
    "form",
    "initiator",
    "listeners",
    "decision",
    "inputs",
    "outputs",
)
_PROCESS_KEYS = tuple(sorted(PROCESS_METADATA))


def definition(core: EngineCore, key: str, version: int | None = None) -> dict[str, Any]:
    """The latest version of ``key`` (or ``version``) as a view; ``UnknownProcess`` if none."""
    with core.db.transaction() as conn:
        row = (
            definitions.latest(conn, key)
            if version is None
            else definitions.by_key_version(conn, key, version)
        )
    if row is None:
        which = "any version" if version is None else f"version {version}"
        raise UnknownProcess(f"no definition {key!r} ({which}) is deployed; bpm deploy FILE")
    return view(row)


def view(row: DefinitionRow) -> dict[str, Any]:
    doc = row.graph
    out: dict[str, Any] = {
        "id": str(row.id),
        "key": row.key,
        "version": row.version,
        "name": row.name,
        "created_at": row.created_at.isoformat(),
    }
    out.update({k: doc[k] for k in _PROCESS_KEYS if k in doc})
    out["nodes"] = list(_nodes(doc.get("nodes", []), None))
    return out


def _nodes(nodes: list[dict[str, Any]], scope: str | None) -> Any:
    for node in nodes:
        view = {"id": node["id"], "type": node["type"], "scope": scope}
        if node.get("name"):
            view["name"] = node["name"]
        view.update({k: node[k] for k in _NODE_KEYS if k in node})
        yield view
        yield from _nodes(node.get("nodes", []), node["id"])
