"""How many instances each definition version has in each state, and how many open
incidents: the cockpit's processes page, in two grouped scans instead of a count per
version and state (the incidents as the runtime statistics count them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from sqlalchemy import Connection, func, select

from bpm.store import statistics
from bpm.store.schema import process_instances as p


@dataclass(frozen=True)
class InstanceCounts:
    """Per definition version: instances by state, and open incidents (absent: none)."""

    by_state: dict[UUID, dict[str, int]] = field(default_factory=dict)
    open_incidents: dict[UUID, int] = field(default_factory=dict)


def counts(conn: Connection, definition_ids: Sequence[UUID]) -> InstanceCounts:
    ids = list(definition_ids)
    out = InstanceCounts()
    if not ids:
        return out
    states = (
        select(p.c.process_def_id, p.c.state, func.count())
        .where(p.c.process_def_id.in_(ids))
        .group_by(p.c.process_def_id, p.c.state)
    )
    for def_id, state, n in conn.execute(states):
        out.by_state.setdefault(def_id, {})[state] = int(n)
    wanted = set(ids)
    for def_id, found in statistics.open_incidents_by_definition(conn).items():
        if def_id in wanted:
            out.open_incidents[def_id] = sum(c.count for c in found)
    return out
