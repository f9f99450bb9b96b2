"""Message start events.

- definition_message_starts: for each process definition, the messages its message start
  events wait for (and at which start event). A correlation that no waiting token takes
  starts an instance of the latest version of the process whose start event waits for it.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "definition_message_starts",
        sa.Column(
            "definition_id",
            sa.Uuid(),
            sa.ForeignKey("process_definitions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("message", sa.Text(), primary_key=True),
        sa.Column("node_id", sa.Text(), nullable=False),
    )
    op.create_index(
        "ix_definition_message_starts_message", "definition_message_starts", ["message"]
    )


def downgrade() -> None:
    op.drop_index("ix_definition_message_starts_message", table_name="definition_message_starts")
    op.drop_table("definition_message_starts")
