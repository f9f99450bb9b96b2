"""DMN decisions: versioned per key, as process definitions are.

- decision_definitions: one row per deployed version of a decision (its DMN file as source,
  its version tag), evaluated by business rule tasks and ``bpm decide``.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import UtcDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "decision_definitions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("version_tag", sa.Text(), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("checksum", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decision_definitions")),
        sa.UniqueConstraint("key", "version", name=op.f("uq_decision_definitions_key_version")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_decision_definitions_version_positive")),
    )


def downgrade() -> None:
    op.drop_table("decision_definitions")
