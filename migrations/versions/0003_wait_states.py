"""Wait states: user tasks live beside the other tasks.

- external_tasks.kind gains USER: a task a person completes through the API or the CLI. It
  shares the task lifecycle (READY until completed, cancelled with its token, history in
  task_events) with handler and external-worker tasks.
- external_tasks.assignee: who claimed (or was assigned) a user task.
- external_tasks.candidate_groups: the groups that may claim it (JSON list of names).

Timers use the schema v2 ``timers`` table as it is; message waits are WAITING tokens with
wait_kind MESSAGE at a receiveTask or messageEvent node.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

KIND = "ck_external_tasks_kind"


def upgrade() -> None:
    with op.batch_alter_table("external_tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("assignee", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("candidate_groups", JsonValue, nullable=True))
        batch_op.drop_constraint(op.f(KIND), type_="check")
        batch_op.create_check_constraint(op.f(KIND), "kind IN ('HANDLER', 'EXTERNAL', 'USER')")


def downgrade() -> None:
    op.execute("DELETE FROM external_tasks WHERE kind = 'USER'")
    with op.batch_alter_table("external_tasks", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(KIND), type_="check")
        batch_op.create_check_constraint(op.f(KIND), "kind IN ('HANDLER', 'EXTERNAL')")
        batch_op.drop_column("candidate_groups")
        batch_op.drop_column("assignee")
