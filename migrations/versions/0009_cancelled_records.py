"""Compensation records can be CANCELLED.

- compensation_records.status: CANCELLED, for a record whose compensation was under way or
  still to come when its token or saga anchor was cancelled (a terminate end event, an
  interrupting event, an operator's cancel).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

STATUS = "ck_compensation_records_status"


def _statuses(*names: str) -> str:
    return "status IN (" + ", ".join(f"'{n}'" for n in names) + ")"


def upgrade() -> None:
    with op.batch_alter_table("compensation_records", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(STATUS), type_="check")
        batch_op.create_check_constraint(
            op.f(STATUS), _statuses("PENDING", "COMPLETED", "FAILED", "CANCELLED")
        )


def downgrade() -> None:
    op.execute("UPDATE compensation_records SET status = 'PENDING' WHERE status = 'CANCELLED'")
    with op.batch_alter_table("compensation_records", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(STATUS), type_="check")
        batch_op.create_check_constraint(op.f(STATUS), _statuses("PENDING", "COMPLETED", "FAILED"))
