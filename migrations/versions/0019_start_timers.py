"""Timer start events.

- definition_start_timers: for each timer start event of a key's latest process definition,
  when it fires next, when it was armed and how many times it fired; the timer scan starts an
  instance when it is due, once per due time.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import UtcDateTime

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "definition_start_timers",
        sa.Column(
            "definition_id",
            sa.Uuid(),
            sa.ForeignKey("process_definitions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("node_id", sa.Text(), primary_key=True),
        sa.Column("fire_at", UtcDateTime(), nullable=False),
        sa.Column("armed_at", UtcDateTime(), nullable=False),
        sa.Column("fired", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
    )
    op.create_index("ix_definition_start_timers_fire_at", "definition_start_timers", ["fire_at"])


def downgrade() -> None:
    op.drop_index("ix_definition_start_timers_fire_at", table_name="definition_start_timers")
    op.drop_table("definition_start_timers")
