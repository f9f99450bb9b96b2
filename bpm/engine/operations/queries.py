"""Finding instances and their history by key, version, business key, state, time and
incidents: the Python API behind ``bpm instances`` and ``bpm history``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.operations.views import event_view
from bpm.store import queries
from bpm.store.queries import InstanceFilter


def find_instances(core: EngineCore, f: InstanceFilter, limit: int = 100) -> list[dict[str, Any]]:
    with core.db.transaction() as conn:
        return [queries.summary(row) for row in queries.find_instances(conn, f, limit)]


def history(
    core: EngineCore,
    f: InstanceFilter,
    *,
    types: Sequence[str] = (),
    limit: int = 1000,
    instances_limit: int = 1000,
) -> list[dict[str, Any]]:
    """History rows of the matching instances (each with its ``instance_id``), in order."""
    with core.db.transaction() as conn:
        found = queries.find_instances(conn, f, instances_limit)
        events = queries.history_of(
            conn, [row.id for row in found], since=f.since, until=f.until, types=types, limit=limit
        )
    return [dict(event_view(e), instance_id=str(e.instance_id)) for e in events]
