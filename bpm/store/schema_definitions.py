"""The definition tables: deployments and their files, process and decision definitions
(immutable, versioned per key)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
)

from bpm.store.schema_base import metadata
from bpm.store.types import JsonValue, UtcDateTime

#: One deploy of one or several files at once (``POST /deployment/create``, ``bpm deploy``).
deployments = Table(
    "deployments",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", Text),
    # Who deployed it: "Camunda Modeler", "bpm deploy", "python", ...
    Column("source", Text),
    Column("deployment_time", UtcDateTime, nullable=False),
    Index("ix_deployments_deployment_time", "deployment_time"),
)

#: The files of a deployment byte for byte, with a SHA-256 of each (changed-only deploys).
deployment_resources = Table(
    "deployment_resources",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("deployment_id", Uuid, ForeignKey("deployments.id"), nullable=False),
    Column("name", Text, nullable=False),
    Column("content", LargeBinary, nullable=False),
    Column("checksum", Text, nullable=False),
    UniqueConstraint("deployment_id", "name"),
    Index("ix_deployment_resources_name_checksum", "name", "checksum"),
)

process_definitions = Table(
    "process_definitions",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("key", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("graph", JsonValue, nullable=False),
    Column("source", Text, nullable=False),
    Column("source_format", Text, nullable=False),
    Column("checksum", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    # historyTimeToLive: seconds an ended instance is kept; NULL: the installation's default.
    Column("history_ttl_seconds", BigInteger),
    # The deployment and the file it came from; camunda:versionTag, to filter on it.
    Column("deployment_id", Uuid),
    Column("resource", Text),
    Column("version_tag", Text),
    UniqueConstraint("key", "version"),
    Index("ix_process_definitions_deployment_id", "deployment_id"),
    CheckConstraint("version >= 1", name="version_positive"),
)

decision_definitions = Table(
    "decision_definitions",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("key", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("version", Integer, nullable=False),
    # camunda:versionTag of the decision: a business rule task may bind to it.
    Column("version_tag", Text),
    # The DMN file the decision came from (parsed again when first evaluated by a process).
    Column("source", Text, nullable=False),
    Column("checksum", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("deployment_id", Uuid),
    Column("resource", Text),
    UniqueConstraint("key", "version"),
    Index("ix_decision_definitions_deployment_id", "deployment_id"),
    CheckConstraint("version >= 1", name="version_positive"),
)

#: The message start events of each process definition: which message starts an instance
#: of it (at which start event). Only a key's latest version listens (``message_starts``).
definition_message_starts = Table(
    "definition_message_starts",
    metadata,
    Column(
        "definition_id",
        Uuid,
        ForeignKey("process_definitions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("message", Text, primary_key=True),
    Column("node_id", Text, nullable=False),
    Index("ix_definition_message_starts_message", "message"),
)

#: The timer start events of each key's latest process definition: when each fires next
#: (``start_timers``); a row goes when its timer has no more ticks or a new version replaces it.
definition_start_timers = Table(
    "definition_start_timers",
    metadata,
    Column(
        "definition_id",
        Uuid,
        ForeignKey("process_definitions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("node_id", Text, primary_key=True),
    Column("fire_at", UtcDateTime, nullable=False),
    # when it was armed (a cycle's origin) and how many ticks fired since
    Column("armed_at", UtcDateTime, nullable=False),
    Column("fired", Integer, nullable=False),
    Column("version", Integer, nullable=False),
    Index("ix_definition_start_timers_fire_at", "fire_at"),
)
