"""Each change of an instance variable, as Camunda's ``/history/detail`` lists them: derived
from the instance's ``VariablesChanged`` and ``VariablesDeleted`` history rows, one update
per variable a row names, numbered per variable (its revision) in the order written.

bpm derives them from one instance's history at a time, as it derives node visits, so a
query names its instances.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import select

from bpm.engine.core.engine_core import EngineCore
from bpm.errors import InvalidRequest
from bpm.states import EngineEvent
from bpm.store.paging import Page
from bpm.store.schema import engine_events as e
from bpm.store.schema import process_instances as p

#: At most this many instances per query: their whole variable history is read.
MAX_INSTANCES = 100


@dataclass(frozen=True)
class VariableUpdateQuery:
    """The updates of these instances that match every field that is set."""

    instance_ids: Sequence[UUID]
    names: Sequence[str] | None = None
    occurred_before: datetime | None = None
    occurred_after: datetime | None = None
    #: True: only each variable's first value; False: only later ones.
    initial: bool | None = None


@dataclass(frozen=True)
class VariableUpdate:
    #: ``<history row id>:<variable name>``: stable, and ordered as written.
    id: str
    instance_id: UUID
    definition_id: UUID
    process_key: str
    name: str
    #: The value set; None for a removal (``deleted``).
    value: Any
    deleted: bool
    at: datetime
    actor: str | None
    #: 1 for the variable's first value, then 2, 3, ...
    revision: int

    @property
    def variable_id(self) -> UUID:
        """The same id as the variable's runtime and history instance."""
        return uuid.uuid5(self.instance_id, self.name)


SORTS = ("time", "name", "revision", "instance_id")


def find(core: EngineCore, q: VariableUpdateQuery, page: Page) -> list[VariableUpdate]:
    found = _matching(core, q)
    for name, descending in reversed(page.order):
        if name not in SORTS:
            raise InvalidRequest(f"cannot sort by {name!r}; sortBy is one of {', '.join(SORTS)}")
        found.sort(key=_key(name), reverse=descending)
    return found[page.offset : page.offset + page.limit]


def count(core: EngineCore, q: VariableUpdateQuery) -> int:
    return len(_matching(core, q))


def _key(name: str) -> Callable[[VariableUpdate], Any]:
    keys: dict[str, Callable[[VariableUpdate], Any]] = {
        "time": lambda u: u.at,
        "name": lambda u: u.name,
        "revision": lambda u: u.revision,
        "instance_id": lambda u: str(u.instance_id),
    }
    return keys[name]


def _matching(core: EngineCore, q: VariableUpdateQuery) -> list[VariableUpdate]:
    if len(q.instance_ids) > MAX_INSTANCES:
        raise InvalidRequest(
            f"the variable updates of at most {MAX_INSTANCES} instances are listed at once"
        )
    stmt = (
        select(e.c.id, e.c.instance_id, e.c.at, e.c.type, e.c.actor, e.c.data)
        .add_columns(p.c.process_def_id, p.c.process_key)
        .join(p, p.c.id == e.c.instance_id)
        .where(
            e.c.instance_id.in_(list(q.instance_ids)),
            e.c.type.in_([EngineEvent.VARIABLES_CHANGED, EngineEvent.VARIABLES_DELETED]),
        )
        .order_by(e.c.id)
    )
    with core.db.transaction() as conn:
        rows = conn.execute(stmt).all()
    revisions: dict[tuple[UUID, str], int] = {}
    out = []
    for row_id, instance_id, at, kind, actor, data, definition_id, key in rows:
        for name, value, deleted in _changes(kind, data or {}):
            revision = revisions[(instance_id, name)] = revisions.get((instance_id, name), 0) + 1
            update = VariableUpdate(
                f"{row_id}:{name}", instance_id, definition_id, key, name, value, deleted, at,
                actor, revision,
            )  # fmt: skip
            if _wanted(update, q):
                out.append(update)
    return out


def _changes(kind: str, data: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    if kind == EngineEvent.VARIABLES_DELETED:
        return [(str(n), None, True) for n in data.get("names") or ()]
    values = data.get("values") or {}
    return [(str(n), v, False) for n, v in values.items()]


def _wanted(u: VariableUpdate, q: VariableUpdateQuery) -> bool:
    return (
        (q.names is None or u.name in q.names)
        and (q.occurred_before is None or u.at < q.occurred_before)
        and (q.occurred_after is None or u.at > q.occurred_after)
        and (q.initial is None or (u.revision == 1) == q.initial)
    )
