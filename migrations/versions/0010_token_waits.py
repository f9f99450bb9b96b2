"""A token parked at a join records what it waits for; a scan's re-send is not repeated at once.

- tokens.waits_for: for a token WAITING at a join, how many of the join's incoming flows must
  each have a parked token before it fires. The waiting-parent scan re-checks a parent only
  when one of its joins can fire, not while a join waits for a sibling that is still at work.
  Rows parked before this column existed have NULL and are re-checked as before.
- tokens.nudged_at: when a recovery scan last re-sent the token's job. A scan does not re-send
  it again within the grace period: while a backlog holds the job in its queue, sending it
  every scan would only grow the backlog.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import UtcDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("waits_for", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("nudged_at", UtcDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_column("nudged_at")
        batch_op.drop_column("waits_for")
