"""Saved task queries (Camunda's filters).

- filters: id, resource type (Task), name, owner, the task query as JSON, and its display
  properties.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue, UtcDateTime

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "filters",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("resource_type", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("owner", sa.Text()),
        sa.Column("query", JsonValue, nullable=False),
        sa.Column("properties", JsonValue),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("filters")
