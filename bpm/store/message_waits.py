"""Which instances may wait for a message that names no instance: those with a live token at
one of the nodes that listen for it in their definition, and every live instance of a
definition whose process-level event subprocess starts on it.

The query only narrows the candidates; the correlating transaction then reads each
candidate's tokens and decides exactly, as it does for a correlation by business key.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, and_, exists, or_, select

from bpm.states import InstanceState, TokenState
from bpm.store.instances import COLUMNS
from bpm.store.rows import InstanceRow, from_row
from bpm.store.schema import process_definitions as pd
from bpm.store.schema import process_instances as t
from bpm.store.schema import tokens as tk

_LIVE_INSTANCE = (InstanceState.RUNNING.value, InstanceState.FAILED.value)
_LIVE_TOKEN = (TokenState.WAITING.value, TokenState.ACTIVE.value)


def definition_ids(conn: Connection) -> list[UUID]:
    """Every deployed definition (each version): an old version's instances still wait."""
    return list(conn.execute(select(pd.c.id)).scalars())


def instances(
    conn: Connection,
    at_nodes: Mapping[UUID, Collection[str]],
    anywhere: Collection[UUID],
    *,
    keys: Collection[str] | None,
    limit: int,
) -> list[InstanceRow]:
    """Live instances with a live token at one of ``at_nodes[definition]``, or of a
    definition in ``anywhere``; oldest first, at most ``limit``."""
    matches: list[ColumnElement[bool]] = []
    if anywhere:
        matches.append(t.c.process_def_id.in_(list(anywhere)))
    for def_id, nodes in at_nodes.items():
        token_there = exists().where(
            tk.c.instance_id == t.c.id,
            tk.c.node_id.in_(list(nodes)),
            tk.c.state.in_(_LIVE_TOKEN),
        )
        matches.append(and_(t.c.process_def_id == def_id, token_there))
    if not matches:
        return []
    stmt = (
        select(*COLUMNS)
        .where(t.c.state.in_(_LIVE_INSTANCE), or_(*matches))
        .order_by(t.c.started_at)
        .limit(limit)
    )
    if keys is not None:
        stmt = stmt.where(t.c.process_key.in_(list(keys)))
    return [from_row(InstanceRow, row) for row in conn.execute(stmt)]
