"""What a fetch may ask of a task's instance besides its topic: its business key, its
process key or definition, and variables equal to given values."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, select

from bpm.store.schema import process_instances as p
from bpm.store.schema import variables as v


@dataclass(frozen=True)
class InstanceMatch:
    """None: any. ``variables``: each named variable must equal its value exactly."""

    business_key: str | None = None
    process_keys: Sequence[str] | None = None
    definition_ids: Sequence[UUID] | None = None
    variables: Mapping[str, Any] | None = None

    @property
    def empty(self) -> bool:
        return (
            self.business_key is None
            and self.process_keys is None
            and self.definition_ids is None
            and not self.variables
        )

    def request(self) -> dict[str, Any]:
        """This filter's columns of the fetch statement's request rows (PostgreSQL)."""
        return {
            "business_key": self.business_key,
            "keys": None if self.process_keys is None else list(self.process_keys),
            "defs": None if self.definition_ids is None else [str(d) for d in self.definition_ids],
            "vars": dict(self.variables) if self.variables else None,
        }


#: The request row's columns and the conditions on a candidate task (``external_tasks``) in
#: the fetch statement's LATERAL pick; each is true when the request does not filter on it.
PG_COLUMNS = "business_key text, keys text[], defs uuid[], vars jsonb"
PG_CONDITIONS = """
             AND (r.business_key IS NULL AND r.keys IS NULL AND r.defs IS NULL
                  OR EXISTS (SELECT 1 FROM process_instances pi
                             WHERE pi.id = external_tasks.instance_id
                               AND (r.business_key IS NULL OR pi.business_key = r.business_key)
                               AND (r.keys IS NULL OR pi.process_key = ANY(r.keys))
                               AND (r.defs IS NULL OR pi.process_def_id = ANY(r.defs))))
             AND (r.vars IS NULL
                  OR NOT EXISTS (SELECT 1 FROM jsonb_each(r.vars) e
                                 WHERE NOT EXISTS (SELECT 1 FROM variables pv
                                                   WHERE pv.instance_id = external_tasks.instance_id
                                                     AND pv.name = e.key
                                                     AND pv.value = e.value)))"""


def matches(conn: Connection, instance_id: UUID, match: InstanceMatch) -> bool:
    """The same test in Python, for SQLite's one-by-one fetch."""
    if match.empty:
        return True
    row = conn.execute(
        select(p.c.business_key, p.c.process_key, p.c.process_def_id).where(p.c.id == instance_id)
    ).first()
    if row is None:
        return False
    if match.business_key is not None and row[0] != match.business_key:
        return False
    if match.process_keys is not None and row[1] not in match.process_keys:
        return False
    if match.definition_ids is not None and row[2] not in match.definition_ids:
        return False
    if match.variables:
        names = list(match.variables)
        have = dict(
            conn.execute(
                select(v.c.name, v.c.value).where(
                    v.c.instance_id == instance_id, v.c.name.in_(names)
                )
            ).all()
        )
        for name, want in match.variables.items():
            if name not in have or json.dumps(have[name]) != json.dumps(want):
                return False
    return True


#: No filter: any instance (frozen, so one shared value serves every default).
ANY_INSTANCE = InstanceMatch()
