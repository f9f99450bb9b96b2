"""Instances a call activity started.

- process_instances.super_instance_id, super_token_id: the calling instance and its token at
  the call activity; root_instance_id: the top of the chain of calls. All NULL for an
  instance nobody called, and indexed only where set, so other instances pay nothing.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_COLUMNS = ("super_instance_id", "super_token_id", "root_instance_id")
_INDEXES = {
    "ix_process_instances_super_token": "super_token_id",
    "ix_process_instances_super_instance": "super_instance_id",
    "ix_process_instances_root": "root_instance_id",
}


def upgrade() -> None:
    for column in _COLUMNS:
        op.add_column("process_instances", sa.Column(column, sa.Uuid(), nullable=True))
    for name, column in _INDEXES.items():
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(
            name,
            "process_instances",
            [column],
            postgresql_where=where,
            sqlite_where=where,
        )


def downgrade() -> None:
    for name in _INDEXES:
        op.drop_index(name, table_name="process_instances")
    for column in _COLUMNS:
        op.drop_column("process_instances", column)
