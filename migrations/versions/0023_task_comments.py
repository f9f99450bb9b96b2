"""Comments on user tasks.

- task_comments: who wrote what on which task of which instance, and when; kept after the
  task ends, deleted with the instance by retention.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import UtcDateTime

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "task_comments",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("instance_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text()),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_task_comments_task_id", "task_comments", ["task_id"])
    op.create_index("ix_task_comments_instance_id", "task_comments", ["instance_id"])


def downgrade() -> None:
    op.drop_table("task_comments")
