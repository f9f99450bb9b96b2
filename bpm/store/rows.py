"""Plain records the store returns, so the engine never handles SQLAlchemy rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID


@dataclass(frozen=True, slots=True)
class DefinitionRow:
    id: UUID
    key: str
    name: str
    version: int
    graph: dict[str, Any]
    checksum: str
    created_at: datetime
    history_ttl_seconds: int | None = None
    deployment_id: UUID | None = None
    resource: str | None = None
    version_tag: str | None = None


@dataclass(frozen=True, slots=True)
class DefinitionRef:
    """Which definition, without its graph: all a start needs, since the compiled graph is
    cached by id (decoding a large model's graph on every start would cost more than the
    start)."""

    id: UUID
    key: str
    version: int


@dataclass(frozen=True, slots=True)
class InstanceRow:
    id: UUID
    process_def_id: UUID
    process_key: str
    business_key: str | None
    idempotency_key: str | None
    state: str
    version: int
    started_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    #: Started by a call activity: the calling instance, its token there, and the top of the
    #: chain of calls; all None for an instance nobody called.
    super_instance_id: UUID | None = None
    super_token_id: UUID | None = None
    root_instance_id: UUID | None = None


@dataclass(frozen=True, slots=True)
class TokenRow:
    id: UUID
    instance_id: UUID
    node_id: str
    state: str
    mode: str
    parent_token_id: UUID | None
    scope_id: str | None
    concurrent: bool
    via_flow: str | None
    wait_kind: str | None
    version: int
    created_at: datetime
    updated_at: datetime
    record_id: UUID | None = None
    #: A token parked at a join: how many of the join's incoming flows must each have a
    #: parked token before it fires (so a scan can tell a join that may fire from one that
    #: waits for a sibling still at work).
    waits_for: int | None = None


@dataclass(frozen=True, slots=True)
class TaskRow:
    id: UUID
    token_id: UUID
    instance_id: UUID
    node_id: str
    topic: str | None
    handler: str | None
    kind: str
    state: str
    retries: int
    attempts: int
    retry_at: datetime | None
    lock_owner: str | None
    lock_expire_at: datetime | None
    error_message: str | None
    error_details: str | None
    priority: int
    version: int
    created_at: datetime
    updated_at: datetime
    assignee: str | None = None
    candidate_groups: list[str] | None = None
    candidate_users: list[str] | None = None
    due_date: datetime | None = None
    follow_up_date: datetime | None = None
    form: dict[str, Any] | None = None
    lock_credential: str | None = None


@dataclass(frozen=True, slots=True)
class TimerRow:
    id: UUID
    token_id: UUID
    instance_id: UUID
    node_id: str
    fire_at: datetime
    state: str
    version: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RecordRow:
    """A compensation record: an activity that succeeded and how to undo it."""

    id: UUID
    instance_id: UUID
    token_id: UUID
    node_id: str
    scope_id: str | None
    handler: str
    seq: int
    status: str
    created_at: datetime
    #: A call activity's record: the called instance whose records it stands for.
    called_instance_id: UUID | None = None


@dataclass(frozen=True, slots=True)
class IncidentRow:
    id: UUID
    instance_id: UUID
    token_id: UUID | None
    task_id: UUID | None
    node_id: str | None
    kind: str
    message: str
    details: str | None
    state: str
    version: int
    created_at: datetime
    resolved_at: datetime | None


@dataclass(frozen=True, slots=True)
class EventRow:
    """One history row from any of the three history tables."""

    id: int
    table: str
    instance_id: UUID | None
    at: datetime
    type: str
    node_id: str | None
    from_state: str | None
    to_state: str | None
    token_id: UUID | None
    task_id: UUID | None
    actor: str | None
    data: dict[str, Any] | None
    cause: str | None = None


R = TypeVar("R")


def from_row(cls: type[R], row: Any) -> R:
    """Build a record from a result row whose columns are in the record's field order."""
    return cls(*row)
