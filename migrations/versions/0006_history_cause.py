"""History rows say why: the job, scan, API call or operator action that made the change.

- token_events.cause, task_events.cause, engine_events.cause: for example
  ``bpm.advance_token token=… v=3``, ``api complete task=…``, ``scan timers``,
  ``operator retry …``. Every row of one transaction has the same cause; ``actor`` says who
  (worker id or operator).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TABLES = ("token_events", "task_events", "engine_events")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("cause", sa.Text(), nullable=True))


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("cause")
