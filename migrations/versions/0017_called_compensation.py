"""Compensation across a call activity.

- compensation_records.called_instance_id: a call activity's record names the called
  instance whose own records it stands for; a saga in the caller undoes them by running the
  called instance's compensations there. NULL for every other record, and indexed only where
  set.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_INDEX = "ix_compensation_records_called"


def upgrade() -> None:
    op.add_column("compensation_records", sa.Column("called_instance_id", sa.Uuid(), nullable=True))
    where = sa.text("called_instance_id IS NOT NULL")
    op.create_index(
        _INDEX,
        "compensation_records",
        ["called_instance_id"],
        postgresql_where=where,
        sqlite_where=where,
    )


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="compensation_records")
    op.drop_column("compensation_records", "called_instance_id")
