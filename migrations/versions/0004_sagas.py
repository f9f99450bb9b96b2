"""Sagas: which compensation record a compensation token runs, and the success order.

- tokens.record_id: for a COMPENSATION token, the compensation record it carries out (no
  foreign key: records and tokens refer to each other, and the pair is written together).
- bpm_compensation_seq (PostgreSQL): numbers compensation records in the order their successes
  are recorded, across branches; per instance the numbers are strictly increasing. SQLite,
  which has one writer at a time, numbers them max + 1 per instance instead.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.schema import CreateSequence, DropSequence, Sequence

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SEQ = Sequence("bpm_compensation_seq")


def upgrade() -> None:
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("record_id", sa.Uuid(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(CreateSequence(SEQ))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(DropSequence(SEQ))
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_column("record_id")
