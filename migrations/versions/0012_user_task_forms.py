"""User tasks as Camunda 7 has them: candidate users, due and follow-up dates, forms.

- external_tasks.candidate_users: the users (JSON list) who may claim a user task besides its
  candidate groups, evaluated when the task was created.
- external_tasks.due_date, follow_up_date: when a user task is due and when to look at it
  again, both evaluated when it was created.
- external_tasks.form: the task's form (form key or reference, fields with their defaults as
  evaluated when the task was created); completing the task is checked against its fields.

Rows from before this revision have NULL in each, which reads as none.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue, UtcDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("external_tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("candidate_users", JsonValue, nullable=True))
        batch_op.add_column(sa.Column("due_date", UtcDateTime(), nullable=True))
        batch_op.add_column(sa.Column("follow_up_date", UtcDateTime(), nullable=True))
        batch_op.add_column(sa.Column("form", JsonValue, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("external_tasks", schema=None) as batch_op:
        batch_op.drop_column("form")
        batch_op.drop_column("follow_up_date")
        batch_op.drop_column("due_date")
        batch_op.drop_column("candidate_users")
