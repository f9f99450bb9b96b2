"""The append-only history tables: one row per token, task and engine event, numbered by one
sequence so a trace merges them in write order."""

from __future__ import annotations

from sqlalchemy import Column, Index, Table, Text, Uuid

from bpm.store.schema_base import history_seq, metadata
from bpm.store.types import BigId, JsonValue, UtcDateTime


def _history(name: str, *extra: Column[object]) -> Table:
    return Table(
        name,
        metadata,
        Column("id", BigId, history_seq, primary_key=True),
        Column("instance_id", Uuid),
        Column("at", UtcDateTime, nullable=False),
        Column("type", Text, nullable=False),
        Column("node_id", Text),
        Column("from_state", Text),
        Column("to_state", Text),
        *extra,
        Column("actor", Text),
        Column("data", JsonValue),
        # What made the change: the job, scan, API call or operator action (one per transaction).
        Column("cause", Text),
        Index(f"ix_{name}_instance_id_id", "instance_id", "id"),
    )


token_events = _history("token_events", Column("token_id", Uuid))
task_events = _history("task_events", Column("task_id", Uuid), Column("token_id", Uuid))
engine_events = _history("engine_events", Column("token_id", Uuid))

#: Comments people left on user tasks (Camunda's task comments): kept with the instance's
#: history, after the task ends, until retention deletes the instance.
task_comments = Table(
    "task_comments",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("task_id", Uuid, nullable=False),
    Column("instance_id", Uuid, nullable=False),
    Column("user_id", Text),
    Column("message", Text, nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Index("ix_task_comments_task_id", "task_id"),
    Index("ix_task_comments_instance_id", "instance_id"),
)

#: Saved task queries (Camunda's filters): a name, an owner, the query as Camunda's task query
#: JSON, and the properties Tasklist shows them with (colour, priority, description).
filters = Table(
    "filters",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("resource_type", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("owner", Text),
    Column("query", JsonValue, nullable=False),
    Column("properties", JsonValue),
    Column("created_at", UtcDateTime, nullable=False),
)
