"""The tables of schema v2, as SQLAlchemy Core metadata.

The Alembic migrations in ``migrations/`` create exactly these tables; a test compares the
migrated database with this metadata so the two never drift. Hot queries are served by partial
indexes on the live states, which stay small however many finished rows pile up.

This module holds the runtime tables (instances, variables, tokens, tasks, timers,
compensation records, incidents, API credentials) and re-exports the definition and history
tables and the shared metadata, so every table is imported from here.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)

from bpm.store.schema_base import HISTORY_BLOCK as HISTORY_BLOCK
from bpm.store.schema_base import (
    INCIDENT_STATES,
    INSTANCE_STATES,
    LINK_TYPES,
    RECORD_STATES,
    ROLES,
    TASK_KINDS,
    TASK_STATES,
    TIMER_STATES,
    TOKEN_MODES,
    TOKEN_STATES,
)
from bpm.store.schema_base import check_in as _in
from bpm.store.schema_base import compensation_seq as compensation_seq
from bpm.store.schema_base import history_seq as history_seq
from bpm.store.schema_base import metadata as metadata
from bpm.store.schema_definitions import decision_definitions as decision_definitions
from bpm.store.schema_definitions import (
    definition_message_starts as definition_message_starts,
)
from bpm.store.schema_definitions import (
    definition_start_timers as definition_start_timers,
)
from bpm.store.schema_definitions import deployment_resources as deployment_resources
from bpm.store.schema_definitions import deployments as deployments
from bpm.store.schema_definitions import process_definitions as process_definitions
from bpm.store.schema_history import engine_events as engine_events
from bpm.store.schema_history import filters as filters
from bpm.store.schema_history import task_comments as task_comments
from bpm.store.schema_history import task_events as task_events
from bpm.store.schema_history import token_events as token_events
from bpm.store.schema_signals import (
    definition_signal_subscriptions as definition_signal_subscriptions,
)
from bpm.store.schema_signals import signal_deliveries as signal_deliveries
from bpm.store.schema_signals import signals as signals
from bpm.store.types import JsonValue, UtcDateTime

process_instances = Table(
    "process_instances",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("process_def_id", Uuid, ForeignKey("process_definitions.id"), nullable=False),
    Column("process_key", Text, nullable=False),
    Column("business_key", Text),
    Column("idempotency_key", Text),
    Column("state", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("ended_at", UtcDateTime),
    # An instance a call activity started: the calling instance and its token there, and
    # the top of the chain of calls (NULL for an instance nobody called).
    Column("super_instance_id", Uuid),
    Column("super_token_id", Uuid),
    Column("root_instance_id", Uuid),
    UniqueConstraint("process_key", "idempotency_key"),
    CheckConstraint(_in("state", INSTANCE_STATES), name="state"),
    Index("ix_process_instances_started_at", "started_at"),
    Index("ix_process_instances_business_key", "business_key"),
    Index("ix_process_instances_process_key_started_at", "process_key", "started_at"),
    Index(
        "ix_process_instances_live",
        "state",
        "started_at",
        postgresql_where=text("state IN ('RUNNING', 'FAILED')"),
        sqlite_where=text("state IN ('RUNNING', 'FAILED')"),
    ),
    # Statistics: the live instances of each definition, by state, counted from the index
    # (and their ids, so the per-node counts find their tokens without reading the rows).
    Index(
        "ix_process_instances_live_definition",
        "process_def_id",
        "state",
        "id",
        postgresql_where=text("state IN ('RUNNING', 'FAILED')"),
        sqlite_where=text("state IN ('RUNNING', 'FAILED')"),
    ),
    # A definition's instances, newest first (its heatmap: ``bpm.store.heatmap``).
    Index("ix_process_instances_definition", "process_def_id", "started_at"),
    # Retention: the ended instances of one definition, oldest first.
    Index(
        "ix_process_instances_ended",
        "process_def_id",
        "ended_at",
        postgresql_where=text("ended_at IS NOT NULL"),
        sqlite_where=text("ended_at IS NOT NULL"),
    ),
    # The instances a token called, and those under a root: only called ones are indexed.
    Index(
        "ix_process_instances_super_token",
        "super_token_id",
        postgresql_where=text("super_token_id IS NOT NULL"),
        sqlite_where=text("super_token_id IS NOT NULL"),
    ),
    Index(
        "ix_process_instances_super_instance",
        "super_instance_id",
        postgresql_where=text("super_instance_id IS NOT NULL"),
        sqlite_where=text("super_instance_id IS NOT NULL"),
    ),
    Index(
        "ix_process_instances_root",
        "root_instance_id",
        postgresql_where=text("root_instance_id IS NOT NULL"),
        sqlite_where=text("root_instance_id IS NOT NULL"),
    ),
)

variables = Table(
    "variables",
    metadata,
    Column("instance_id", Uuid, ForeignKey("process_instances.id"), nullable=False),
    Column("name", Text, nullable=False),
    Column("value", JsonValue, nullable=False),
    Column("version", Integer, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("instance_id", "name"),
)

#: Variables that belong to a scope (an activity or subprocess a token is at) instead of the
#: whole instance: they end when the token leaves that node.
local_variables = Table(
    "local_variables",
    metadata,
    Column("instance_id", Uuid, ForeignKey("process_instances.id"), nullable=False),
    Column("scope_token_id", Uuid, nullable=False),
    Column("scope_node_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("value", JsonValue, nullable=False),
    Column("version", Integer, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("scope_token_id", "scope_node_id", "name"),
    Index("ix_local_variables_instance", "instance_id"),
)

tokens = Table(
    "tokens",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("instance_id", Uuid, ForeignKey("process_instances.id"), nullable=False),
    Column("node_id", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("mode", Text, nullable=False),
    Column("parent_token_id", Uuid, ForeignKey("tokens.id")),
    Column("scope_id", Text),
    # A concurrent branch of its parent's scope (created by a fork or a join inside a fork),
    # as opposed to the scope's own token. Forks of a branch create siblings, as Camunda 7 does.
    Column("concurrent", Boolean, nullable=False),
    # The flow the token arrived by: parallel joins count arrivals per incoming flow.
    Column("via_flow", Text),
    # What a WAITING token waits for (TASK, CHILDREN, JOIN, ...), so scans need no graph.
    Column("wait_kind", Text),
    Column("version", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # A COMPENSATION token: the compensation record it carries out.
    Column("record_id", Uuid),
    # Parked at a join: how many of its incoming flows must each have a parked token.
    Column("waits_for", Integer),
    # When a recovery scan last re-sent this token's job (not again within the grace period).
    Column("nudged_at", UtcDateTime),
    CheckConstraint(_in("state", TOKEN_STATES), name="state"),
    CheckConstraint(_in("mode", TOKEN_MODES), name="mode"),
    Index("ix_tokens_instance_id", "instance_id"),
    Index(
        "ix_tokens_live_children",
        "parent_token_id",
        postgresql_where=text("state IN ('ACTIVE', 'WAITING', 'FAILED')"),
        sqlite_where=text("state IN ('ACTIVE', 'WAITING', 'FAILED')"),
    ),
    Index(
        "ix_tokens_active",
        "updated_at",
        postgresql_where=text("state = 'ACTIVE'"),
        sqlite_where=text("state = 'ACTIVE'"),
    ),
    Index(
        "ix_tokens_waiting",
        "wait_kind",
        "updated_at",
        postgresql_where=text("state = 'WAITING'"),
        sqlite_where=text("state = 'WAITING'"),
    ),
    # Deleting a token (retention) checks that no token names it as parent: without this
    # index that check reads the whole table, once per deleted token. Root tokens need none.
    Index(
        "ix_tokens_parent_token_id",
        "parent_token_id",
        postgresql_where=text("parent_token_id IS NOT NULL"),
        sqlite_where=text("parent_token_id IS NOT NULL"),
    ),
)

token_links = Table(
    "token_links",
    metadata,
    Column("parent_token_id", Uuid, ForeignKey("tokens.id"), nullable=False),
    Column("child_token_id", Uuid, ForeignKey("tokens.id"), nullable=False),
    Column("link_type", Text, nullable=False),
    PrimaryKeyConstraint("parent_token_id", "child_token_id", "link_type"),
    CheckConstraint(_in("link_type", LINK_TYPES), name="link_type"),
    Index("ix_token_links_child_token_id", "child_token_id"),
)

external_tasks = Table(
    "external_tasks",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("token_id", Uuid, ForeignKey("tokens.id"), nullable=False),
    Column("instance_id", Uuid, ForeignKey("process_instances.id"), nullable=False),
    Column("node_id", Text, nullable=False),
    Column("topic", Text),
    Column("handler", Text),
    Column("kind", Text, nullable=False),
    Column("state", Text, nullable=False),
    # retries left (Camunda's meaning); attempts counts runs started, each one as it starts.
    Column("retries", Integer, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("retry_at", UtcDateTime),
    Column("lock_owner", Text),
    Column("lock_expire_at", UtcDateTime),
    Column("error_message", Text),
    Column("error_details", Text),
    Column("priority", Integer, nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # User tasks (kind USER): who has it, and which groups may claim it (JSON list).
    Column("assignee", Text),
    Column("candidate_groups", JsonValue),
    # User tasks: who else may claim it (JSON list), when it is due and when to look at it
    # again, and its form as the task shows it (defaults evaluated when it was created).
    Column("candidate_users", JsonValue),
    Column("due_date", UtcDateTime),
    Column("follow_up_date", UtcDateTime),
    Column("form", JsonValue),
    # The API credential whose fetch or lock holds the task (NULL: none); only it may report
    # on the lock. Meaningful while LOCKED; each lock sets it.
    Column("lock_credential", Text),
    CheckConstraint(_in("state", TASK_STATES), name="state"),
    CheckConstraint(_in("kind", TASK_KINDS), name="kind"),
    CheckConstraint("retries >= 0 AND attempts >= 0", name="counts"),
    Index("ix_external_tasks_token_id", "token_id"),
    Index("ix_external_tasks_instance_id", "instance_id"),
    Index(
        "ix_external_tasks_ready",
        "kind",
        "retry_at",
        postgresql_where=text("state = 'READY'"),
        sqlite_where=text("state = 'READY'"),
    ),
    Index(
        "ix_external_tasks_locked",
        "lock_expire_at",
        postgresql_where=text("state = 'LOCKED'"),
        sqlite_where=text("state = 'LOCKED'"),
    ),
)

# Fetch-and-lock reads a topic's READY tasks by priority, highest first, then oldest: the index
# runs in that order, so a fetch reads ten entries however long the topic's backlog is (an
# ascending priority cannot serve "priority DESC, created_at", and the fetch sorted the whole
# backlog: about 100 ms with 100,000 READY tasks in the topic).
Index(
    "ix_external_tasks_fetch",
    external_tasks.c.topic,
    external_tasks.c.priority.desc(),
    external_tasks.c.created_at,
    postgresql_where=text("state = 'READY' AND kind = 'EXTERNAL'"),
    sqlite_where=text("state = 'READY' AND kind = 'EXTERNAL'"),
)

timers = Table(
    "timers",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("token_id", Uuid, ForeignKey("tokens.id"), nullable=False),
    Column("instance_id", Uuid, ForeignKey("process_instances.id"), nullable=False),
    Column("node_id", Text, nullable=False),
    Column("fire_at", UtcDateTime, nullable=False),
    Column("state", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    CheckConstraint(_in("state", TIMER_STATES), name="state"),
    Index(
        "ix_timers_due",
        "fire_at",
        postgresql_where=text("state = 'SCHEDULED'"),
        sqlite_where=text("state = 'SCHEDULED'"),
    ),
    Index("ix_timers_instance_id", "instance_id"),
    Index("ix_timers_token_id", "token_id"),  # foreign key checks when tokens are deleted
)

compensation_records = Table(
    "compensation_records",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("instance_id", Uuid, ForeignKey("process_instances.id"), nullable=False),
    Column("token_id", Uuid, ForeignKey("tokens.id"), nullable=False),
    Column("node_id", Text, nullable=False),
    Column("scope_id", Text),
    Column("handler", Text, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("status", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    # A call activity's record: the called instance whose own records it stands for (no
    # foreign key: retention may delete an ended called instance before its caller ends).
    Column("called_instance_id", Uuid),
    UniqueConstraint("instance_id", "seq"),
    CheckConstraint(_in("status", RECORD_STATES), name="status"),
    Index("ix_compensation_records_token_id", "token_id"),  # foreign key checks (retention)
    Index(
        "ix_compensation_records_called",
        "called_instance_id",
        postgresql_where=text("called_instance_id IS NOT NULL"),
        sqlite_where=text("called_instance_id IS NOT NULL"),
    ),
)

incidents = Table(
    "incidents",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("instance_id", Uuid, ForeignKey("process_instances.id"), nullable=False),
    Column("token_id", Uuid, ForeignKey("tokens.id")),
    Column("task_id", Uuid, ForeignKey("external_tasks.id")),
    Column("node_id", Text),
    Column("kind", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("details", Text),
    Column("state", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("resolved_at", UtcDateTime),
    CheckConstraint(_in("state", INCIDENT_STATES), name="state"),
    Index("ix_incidents_instance_id", "instance_id"),
    # Foreign key checks when tokens and tasks are deleted (retention).
    Index("ix_incidents_token_id", "token_id"),
    Index("ix_incidents_task_id", "task_id"),
    Index(
        "ix_incidents_open",
        "created_at",
        postgresql_where=text("state = 'OPEN'"),
        sqlite_where=text("state = 'OPEN'"),
    ),
)


#: Who may call the HTTP API: a name, its role and the topics or process keys it is limited to
#: (NULL: not limited), and the scrypt hash of its secret (the secret itself is never stored);
#: the user it acts as on the tasklist (NULL: its name) and that user's groups (NULL: none).
api_credentials = Table(
    "api_credentials",
    metadata,
    Column("name", Text, primary_key=True),
    Column("role", Text, nullable=False),
    Column("topics", JsonValue),
    Column("processes", JsonValue),
    Column("secret_hash", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("user_id", Text),
    Column("groups", JsonValue),
    CheckConstraint(_in("role", ROLES), name="role"),
)
