"""A definition's instances are found by an index, newest first (its heatmap reads them).

- ix_process_instances_definition on process_instances(process_def_id, started_at).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_process_instances_definition", "process_instances", ["process_def_id", "started_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_process_instances_definition", table_name="process_instances")
