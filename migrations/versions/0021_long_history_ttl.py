"""A definition's historyTimeToLive may be longer than 68 years.

- process_definitions.history_ttl_seconds becomes a 64-bit integer: Camunda 7 models write
  lives of a century (``P36500D``), past what 32-bit seconds hold.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("process_definitions") as batch_op:
        batch_op.alter_column(
            "history_ttl_seconds", type_=sa.BigInteger(), existing_type=sa.Integer()
        )


def downgrade() -> None:
    limit = 2**31 - 1
    op.execute(
        sa.text(
            "UPDATE process_definitions SET history_ttl_seconds = :limit "
            "WHERE history_ttl_seconds > :limit"
        ).bindparams(limit=limit)
    )
    with op.batch_alter_table("process_definitions") as batch_op:
        batch_op.alter_column(
            "history_ttl_seconds", type_=sa.Integer(), existing_type=sa.BigInteger()
        )
