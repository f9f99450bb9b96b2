"""Retention: a history time to live per definition, and the indexes the cleanup needs.

- process_definitions.history_ttl_seconds: the definition's ``historyTimeToLive`` (seconds an
  ended instance is kept before the cleanup deletes it); NULL: the installation's default
  (``BPM_HISTORY_TTL_DAYS``), or kept for ever when there is none.
- ix_process_instances_ended: the ended instances of one definition in ``ended_at`` order
  (partial: live instances, whose ``ended_at`` is NULL, are not in it), so each cleanup batch
  is one short index range scan however many instances are kept.
- ix_tokens_parent_token_id (partial: child tokens only), ix_timers_token_id,
  ix_compensation_records_token_id, ix_incidents_token_id, ix_incidents_task_id: deleting a
  token or a task makes the database check that no row still refers to it. Without an index
  on the referring column that check reads the whole table once per deleted row; measured on
  200,000 instances, a batch of 100 took 20 s without these indexes, under 100 ms with them.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: (table, index, columns) of the plain indexes for foreign key checks.
FK_INDEXES = (
    ("timers", "ix_timers_token_id", ["token_id"]),
    ("compensation_records", "ix_compensation_records_token_id", ["token_id"]),
    ("incidents", "ix_incidents_token_id", ["token_id"]),
    ("incidents", "ix_incidents_task_id", ["task_id"]),
)


def upgrade() -> None:
    with op.batch_alter_table("process_definitions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("history_ttl_seconds", sa.Integer(), nullable=True))
    with op.batch_alter_table("process_instances", schema=None) as batch_op:
        batch_op.create_index(
            "ix_process_instances_ended",
            ["process_def_id", "ended_at"],
            unique=False,
            postgresql_where=sa.text("ended_at IS NOT NULL"),
            sqlite_where=sa.text("ended_at IS NOT NULL"),
        )
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.create_index(
            "ix_tokens_parent_token_id",
            ["parent_token_id"],
            unique=False,
            postgresql_where=sa.text("parent_token_id IS NOT NULL"),
            sqlite_where=sa.text("parent_token_id IS NOT NULL"),
        )
    for table, name, columns in FK_INDEXES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(name, columns, unique=False)


def downgrade() -> None:
    for table, name, _ in reversed(FK_INDEXES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(name)
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_tokens_parent_token_id")
    with op.batch_alter_table("process_instances", schema=None) as batch_op:
        batch_op.drop_index("ix_process_instances_ended")
    with op.batch_alter_table("process_definitions", schema=None) as batch_op:
        batch_op.drop_column("history_ttl_seconds")
