"""The instances of definition versions counted by state, with their open incidents."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.store import instance_counts
from bpm.store.instance_counts import InstanceCounts


def counts(core: EngineCore, definition_ids: Sequence[UUID]) -> InstanceCounts:
    with core.db.transaction() as conn:
        return instance_counts.counts(conn, definition_ids)
