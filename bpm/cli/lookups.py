"""Read-only look-ups the engine facade does not offer yet, kept in one place.

They read the store directly; when ``Engine`` grows equivalents (a definition by key, the
instance of a token) these should call them instead.
"""

from __future__ import annotations

from uuid import UUID

from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.errors import TaskNotFound
from bpm.store import definitions, tasks, tokens


def missing_handlers(rt: EmbeddedRuntime, key: str) -> list[str]:
    """Handler names the latest version of ``key`` calls that no imported module registered."""
    with rt.db.transaction() as conn:
        row = definitions.latest(conn, key)
    if row is None:
        return []  # Engine.start reports the unknown key with its own message
    graph = rt.engine.graph(row.id)
    names = {node.handler for node in graph.nodes.values() if node.handler}
    return sorted(name for name in names if name not in rt.engine.handlers)


def instance_of_token(engine: Engine, token_id: UUID) -> UUID | None:
    with engine.db.transaction() as conn:
        row = tokens.get(conn, token_id)
    return row.instance_id if row else None


def token_of_task(engine: Engine, task_id: UUID) -> UUID:
    with engine.db.transaction() as conn:
        row = tasks.get(conn, task_id)
    if row is None:
        raise TaskNotFound(f"no task has id {task_id}")
    return row.token_id
