"""Schema v2: definitions, instances, variables, tokens, tasks, timers, compensation
records, incidents and the three append-only history tables.

Columns beyond the spec's list, and why:
- process_instances.process_key: listing by key, and idempotent starts are unique per key.
- process_instances.idempotency_key: (process_key, idempotency_key) unique makes a duplicate
  start return the existing instance.
- tokens.concurrent / via_flow / wait_kind: joins count arrivals per incoming flow among one
  scope's branches; scans find what a WAITING token waits for without loading the graph.
- external_tasks.handler / attempts / updated_at: in-process handler name; runs started (each
  counts as it starts); when a lost job may be assumed.
- incidents: what an operator must act on (failed token, gateway without a way out).
- history *.actor: the worker id or operator that made the change.
- bpm_history_seq: one sequence numbers the three history tables on PostgreSQL, so a trace
  merges them in exact write order.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.schema import CreateSequence, DropSequence, Sequence

from bpm.store.types import JsonValue, UtcDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


HISTORY_SEQ = Sequence("bpm_history_seq", increment=1000)  # a block of ids per transaction


def _is_postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _history_id() -> sa.Column[int]:
    default = sa.text("nextval('bpm_history_seq')") if _is_postgres() else None
    return sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        server_default=default,
        nullable=False,
    )


def upgrade() -> None:
    if _is_postgres():
        op.execute(CreateSequence(HISTORY_SEQ))
    op.create_table(
        "engine_events",
        _history_id(),
        sa.Column("instance_id", sa.Uuid(), nullable=True),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=True),
        sa.Column("from_state", sa.Text(), nullable=True),
        sa.Column("to_state", sa.Text(), nullable=True),
        sa.Column("token_id", sa.Uuid(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column(
            "data",
            JsonValue,
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_engine_events")),
    )
    with op.batch_alter_table("engine_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_engine_events_instance_id_id", ["instance_id", "id"], unique=False
        )

    op.create_table(
        "process_definitions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column(
            "graph",
            JsonValue,
            nullable=False,
        ),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("source_format", sa.Text(), nullable=False),
        sa.Column("checksum", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint("version >= 1", name=op.f("ck_process_definitions_version_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_process_definitions")),
        sa.UniqueConstraint("key", "version", name=op.f("uq_process_definitions_key_version")),
    )
    op.create_table(
        "task_events",
        _history_id(),
        sa.Column("instance_id", sa.Uuid(), nullable=True),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=True),
        sa.Column("from_state", sa.Text(), nullable=True),
        sa.Column("to_state", sa.Text(), nullable=True),
        sa.Column("task_id", sa.Uuid(), nullable=True),
        sa.Column("token_id", sa.Uuid(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column(
            "data",
            JsonValue,
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_events")),
    )
    with op.batch_alter_table("task_events", schema=None) as batch_op:
        batch_op.create_index("ix_task_events_instance_id_id", ["instance_id", "id"], unique=False)

    op.create_table(
        "token_events",
        _history_id(),
        sa.Column("instance_id", sa.Uuid(), nullable=True),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=True),
        sa.Column("from_state", sa.Text(), nullable=True),
        sa.Column("to_state", sa.Text(), nullable=True),
        sa.Column("token_id", sa.Uuid(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column(
            "data",
            JsonValue,
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_token_events")),
    )
    with op.batch_alter_table("token_events", schema=None) as batch_op:
        batch_op.create_index("ix_token_events_instance_id_id", ["instance_id", "id"], unique=False)

    op.create_table(
        "process_instances",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("process_def_id", sa.Uuid(), nullable=False),
        sa.Column("process_key", sa.Text(), nullable=False),
        sa.Column("business_key", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.CheckConstraint(
            "state IN ('RUNNING', 'COMPLETED', 'FAILED', 'TERMINATED', 'CANCELLED')",
            name=op.f("ck_process_instances_state"),
        ),
        sa.ForeignKeyConstraint(
            ["process_def_id"],
            ["process_definitions.id"],
            name=op.f("fk_process_instances_process_def_id_process_definitions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_process_instances")),
        sa.UniqueConstraint(
            "process_key",
            "idempotency_key",
            name=op.f("uq_process_instances_process_key_idempotency_key"),
        ),
    )
    with op.batch_alter_table("process_instances", schema=None) as batch_op:
        batch_op.create_index("ix_process_instances_business_key", ["business_key"], unique=False)
        batch_op.create_index(
            "ix_process_instances_live",
            ["state", "started_at"],
            unique=False,
            postgresql_where=sa.text("state IN ('RUNNING', 'FAILED')"),
            sqlite_where=sa.text("state IN ('RUNNING', 'FAILED')"),
        )
        batch_op.create_index(
            "ix_process_instances_process_key_started_at",
            ["process_key", "started_at"],
            unique=False,
        )
        batch_op.create_index("ix_process_instances_started_at", ["started_at"], unique=False)

    op.create_table(
        "tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("instance_id", sa.Uuid(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("parent_token_id", sa.Uuid(), nullable=True),
        sa.Column("scope_id", sa.Text(), nullable=True),
        sa.Column("concurrent", sa.Boolean(), nullable=False),
        sa.Column("via_flow", sa.Text(), nullable=True),
        sa.Column("wait_kind", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint("mode IN ('FORWARD', 'COMPENSATION')", name=op.f("ck_tokens_mode")),
        sa.CheckConstraint(
            "state IN ('ACTIVE', 'WAITING', 'COMPLETED', 'FAILED', 'CANCELLED')",
            name=op.f("ck_tokens_state"),
        ),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instances.id"],
            name=op.f("fk_tokens_instance_id_process_instances"),
        ),
        sa.ForeignKeyConstraint(
            ["parent_token_id"], ["tokens.id"], name=op.f("fk_tokens_parent_token_id_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
    )
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.create_index(
            "ix_tokens_active",
            ["updated_at"],
            unique=False,
            postgresql_where=sa.text("state = 'ACTIVE'"),
            sqlite_where=sa.text("state = 'ACTIVE'"),
        )
        batch_op.create_index("ix_tokens_instance_id", ["instance_id"], unique=False)
        batch_op.create_index(
            "ix_tokens_live_children",
            ["parent_token_id"],
            unique=False,
            postgresql_where=sa.text("state IN ('ACTIVE', 'WAITING', 'FAILED')"),
            sqlite_where=sa.text("state IN ('ACTIVE', 'WAITING', 'FAILED')"),
        )
        batch_op.create_index(
            "ix_tokens_waiting",
            ["wait_kind", "updated_at"],
            unique=False,
            postgresql_where=sa.text("state = 'WAITING'"),
            sqlite_where=sa.text("state = 'WAITING'"),
        )

    op.create_table(
        "variables",
        sa.Column("instance_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column(
            "value",
            JsonValue,
            nullable=False,
        ),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instances.id"],
            name=op.f("fk_variables_instance_id_process_instances"),
        ),
        sa.PrimaryKeyConstraint("instance_id", "name", name=op.f("pk_variables")),
    )
    op.create_table(
        "compensation_records",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("instance_id", sa.Uuid(), nullable=False),
        sa.Column("token_id", sa.Uuid(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("scope_id", sa.Text(), nullable=True),
        sa.Column("handler", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint(
            "status IN ('PENDING', 'COMPLETED', 'FAILED')",
            name=op.f("ck_compensation_records_status"),
        ),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instances.id"],
            name=op.f("fk_compensation_records_instance_id_process_instances"),
        ),
        sa.ForeignKeyConstraint(
            ["token_id"], ["tokens.id"], name=op.f("fk_compensation_records_token_id_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compensation_records")),
        sa.UniqueConstraint(
            "instance_id", "seq", name=op.f("uq_compensation_records_instance_id_seq")
        ),
    )
    op.create_table(
        "external_tasks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_id", sa.Uuid(), nullable=False),
        sa.Column("instance_id", sa.Uuid(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=True),
        sa.Column("handler", sa.Text(), nullable=True),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("retry_at", UtcDateTime(), nullable=True),
        sa.Column("lock_owner", sa.Text(), nullable=True),
        sa.Column("lock_expire_at", UtcDateTime(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_details", sa.Text(), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint("kind IN ('HANDLER', 'EXTERNAL')", name=op.f("ck_external_tasks_kind")),
        sa.CheckConstraint(
            "state IN ('READY', 'LOCKED', 'DONE', 'FAILED', 'CANCELLED')",
            name=op.f("ck_external_tasks_state"),
        ),
        sa.CheckConstraint("retries >= 0 AND attempts >= 0", name=op.f("ck_external_tasks_counts")),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instances.id"],
            name=op.f("fk_external_tasks_instance_id_process_instances"),
        ),
        sa.ForeignKeyConstraint(
            ["token_id"], ["tokens.id"], name=op.f("fk_external_tasks_token_id_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_external_tasks")),
    )
    with op.batch_alter_table("external_tasks", schema=None) as batch_op:
        batch_op.create_index(
            "ix_external_tasks_fetch",
            ["topic", "priority", "created_at"],
            unique=False,
            postgresql_where=sa.text("state = 'READY' AND kind = 'EXTERNAL'"),
            sqlite_where=sa.text("state = 'READY' AND kind = 'EXTERNAL'"),
        )
        batch_op.create_index("ix_external_tasks_instance_id", ["instance_id"], unique=False)
        batch_op.create_index(
            "ix_external_tasks_locked",
            ["lock_expire_at"],
            unique=False,
            postgresql_where=sa.text("state = 'LOCKED'"),
            sqlite_where=sa.text("state = 'LOCKED'"),
        )
        batch_op.create_index(
            "ix_external_tasks_ready",
            ["kind", "retry_at"],
            unique=False,
            postgresql_where=sa.text("state = 'READY'"),
            sqlite_where=sa.text("state = 'READY'"),
        )
        batch_op.create_index("ix_external_tasks_token_id", ["token_id"], unique=False)

    op.create_table(
        "timers",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_id", sa.Uuid(), nullable=False),
        sa.Column("instance_id", sa.Uuid(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("fire_at", UtcDateTime(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint(
            "state IN ('SCHEDULED', 'FIRED', 'CANCELLED')", name=op.f("ck_timers_state")
        ),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instances.id"],
            name=op.f("fk_timers_instance_id_process_instances"),
        ),
        sa.ForeignKeyConstraint(
            ["token_id"], ["tokens.id"], name=op.f("fk_timers_token_id_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_timers")),
    )
    with op.batch_alter_table("timers", schema=None) as batch_op:
        batch_op.create_index(
            "ix_timers_due",
            ["fire_at"],
            unique=False,
            postgresql_where=sa.text("state = 'SCHEDULED'"),
            sqlite_where=sa.text("state = 'SCHEDULED'"),
        )
        batch_op.create_index("ix_timers_instance_id", ["instance_id"], unique=False)

    op.create_table(
        "token_links",
        sa.Column("parent_token_id", sa.Uuid(), nullable=False),
        sa.Column("child_token_id", sa.Uuid(), nullable=False),
        sa.Column("link_type", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "link_type IN ('FORK', 'SUBPROCESS', 'JOIN', 'COMPENSATION')",
            name=op.f("ck_token_links_link_type"),
        ),
        sa.ForeignKeyConstraint(
            ["child_token_id"], ["tokens.id"], name=op.f("fk_token_links_child_token_id_tokens")
        ),
        sa.ForeignKeyConstraint(
            ["parent_token_id"], ["tokens.id"], name=op.f("fk_token_links_parent_token_id_tokens")
        ),
        sa.PrimaryKeyConstraint(
            "parent_token_id", "child_token_id", "link_type", name=op.f("pk_token_links")
        ),
    )
    with op.batch_alter_table("token_links", schema=None) as batch_op:
        batch_op.create_index("ix_token_links_child_token_id", ["child_token_id"], unique=False)

    op.create_table(
        "incidents",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("instance_id", sa.Uuid(), nullable=False),
        sa.Column("token_id", sa.Uuid(), nullable=True),
        sa.Column("task_id", sa.Uuid(), nullable=True),
        sa.Column("node_id", sa.Text(), nullable=True),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("details", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("resolved_at", UtcDateTime(), nullable=True),
        sa.CheckConstraint("state IN ('OPEN', 'RESOLVED')", name=op.f("ck_incidents_state")),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instances.id"],
            name=op.f("fk_incidents_instance_id_process_instances"),
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["external_tasks.id"], name=op.f("fk_incidents_task_id_external_tasks")
        ),
        sa.ForeignKeyConstraint(
            ["token_id"], ["tokens.id"], name=op.f("fk_incidents_token_id_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incidents")),
    )
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index("ix_incidents_instance_id", ["instance_id"], unique=False)
        batch_op.create_index(
            "ix_incidents_open",
            ["created_at"],
            unique=False,
            postgresql_where=sa.text("state = 'OPEN'"),
            sqlite_where=sa.text("state = 'OPEN'"),
        )


def downgrade() -> None:
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_incidents_open",
            postgresql_where=sa.text("state = 'OPEN'"),
            sqlite_where=sa.text("state = 'OPEN'"),
        )
        batch_op.drop_index("ix_incidents_instance_id")

    op.drop_table("incidents")
    with op.batch_alter_table("token_links", schema=None) as batch_op:
        batch_op.drop_index("ix_token_links_child_token_id")

    op.drop_table("token_links")
    with op.batch_alter_table("timers", schema=None) as batch_op:
        batch_op.drop_index("ix_timers_instance_id")
        batch_op.drop_index(
            "ix_timers_due",
            postgresql_where=sa.text("state = 'SCHEDULED'"),
            sqlite_where=sa.text("state = 'SCHEDULED'"),
        )

    op.drop_table("timers")
    with op.batch_alter_table("external_tasks", schema=None) as batch_op:
        batch_op.drop_index("ix_external_tasks_token_id")
        batch_op.drop_index(
            "ix_external_tasks_ready",
            postgresql_where=sa.text("state = 'READY'"),
            sqlite_where=sa.text("state = 'READY'"),
        )
        batch_op.drop_index(
            "ix_external_tasks_locked",
            postgresql_where=sa.text("state = 'LOCKED'"),
            sqlite_where=sa.text("state = 'LOCKED'"),
        )
        batch_op.drop_index("ix_external_tasks_instance_id")
        batch_op.drop_index(
            "ix_external_tasks_fetch",
            postgresql_where=sa.text("state = 'READY' AND kind = 'EXTERNAL'"),
            sqlite_where=sa.text("state = 'READY' AND kind = 'EXTERNAL'"),
        )

    op.drop_table("external_tasks")
    op.drop_table("compensation_records")
    op.drop_table("variables")
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_tokens_waiting",
            postgresql_where=sa.text("state = 'WAITING'"),
            sqlite_where=sa.text("state = 'WAITING'"),
        )
        batch_op.drop_index(
            "ix_tokens_live_children",
            postgresql_where=sa.text("state IN ('ACTIVE', 'WAITING', 'FAILED')"),
            sqlite_where=sa.text("state IN ('ACTIVE', 'WAITING', 'FAILED')"),
        )
        batch_op.drop_index("ix_tokens_instance_id")
        batch_op.drop_index(
            "ix_tokens_active",
            postgresql_where=sa.text("state = 'ACTIVE'"),
            sqlite_where=sa.text("state = 'ACTIVE'"),
        )

    op.drop_table("tokens")
    with op.batch_alter_table("process_instances", schema=None) as batch_op:
        batch_op.drop_index("ix_process_instances_started_at")
        batch_op.drop_index("ix_process_instances_process_key_started_at")
        batch_op.drop_index(
            "ix_process_instances_live",
            postgresql_where=sa.text("state IN ('RUNNING', 'FAILED')"),
            sqlite_where=sa.text("state IN ('RUNNING', 'FAILED')"),
        )
        batch_op.drop_index("ix_process_instances_business_key")

    op.drop_table("process_instances")
    with op.batch_alter_table("token_events", schema=None) as batch_op:
        batch_op.drop_index("ix_token_events_instance_id_id")

    op.drop_table("token_events")
    with op.batch_alter_table("task_events", schema=None) as batch_op:
        batch_op.drop_index("ix_task_events_instance_id_id")

    op.drop_table("task_events")
    op.drop_table("process_definitions")
    with op.batch_alter_table("engine_events", schema=None) as batch_op:
        batch_op.drop_index("ix_engine_events_instance_id_id")

    op.drop_table("engine_events")
    if _is_postgres():
        op.execute(DropSequence(HISTORY_SEQ))
