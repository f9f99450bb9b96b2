"""Which message starts an instance of which process: the message start events of every
definition, of which only each key's latest version listens (as in Camunda 7, deploying a
new version moves the subscription to it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import Connection, func, select

from bpm.store.schema import definition_message_starts as t
from bpm.store.schema import process_definitions as pd


@dataclass(frozen=True)
class MessageStart:
    definition_id: UUID
    key: str
    node_id: str


def record(conn: Connection, definition_id: UUID, starts: Mapping[str, str]) -> None:
    """A new definition's message start events: message name -> start event id."""
    if starts:
        conn.execute(
            t.insert(),
            [
                {"definition_id": definition_id, "message": message, "node_id": node_id}
                for message, node_id in starts.items()
            ],
        )


def forget(conn: Connection, definition_ids: list[UUID]) -> None:
    """Definitions being deleted take their message start events with them."""
    if definition_ids:
        conn.execute(t.delete().where(t.c.definition_id.in_(definition_ids)))


def listening(conn: Connection, message: str) -> list[MessageStart]:
    """The latest versions whose message start event waits for ``message``."""
    other = pd.alias("other")
    latest = select(func.max(other.c.version)).where(other.c.key == pd.c.key).scalar_subquery()
    stmt = (
        select(t.c.definition_id, pd.c.key, t.c.node_id)
        .join(pd, pd.c.id == t.c.definition_id)
        .where(t.c.message == message, pd.c.version == latest)
        .order_by(pd.c.key)
    )
    return [MessageStart(r.definition_id, r.key, r.node_id) for r in conn.execute(stmt)]
