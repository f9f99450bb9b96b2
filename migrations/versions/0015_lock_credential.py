"""The credential a lock was taken with.

- external_tasks.lock_credential: the name of the API credential whose fetch or lock holds
  the task (NULL: taken without one, by the engine's own workers or an open server). Only
  that credential may report on, extend or give back the lock; ``lock_owner`` stays the
  worker id the caller chose. Read only while the task is LOCKED; the next lock overwrites it.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-12
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("external_tasks", sa.Column("lock_credential", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("external_tasks", "lock_credential")
