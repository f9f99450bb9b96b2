"""The live instances of each definition, by state, from an index alone.

- ix_process_instances_live_definition: (process_def_id, state, id) over RUNNING and FAILED
  instances, so the per-definition statistics count them, and the per-node statistics find
  their tokens, without reading the instances' rows.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

LIVE = "state IN ('RUNNING', 'FAILED')"


def upgrade() -> None:
    op.create_index(
        "ix_process_instances_live_definition",
        "process_instances",
        ["process_def_id", "state", "id"],
        postgresql_where=sa.text(LIVE),
        sqlite_where=sa.text(LIVE),
    )


def downgrade() -> None:
    op.drop_index("ix_process_instances_live_definition", table_name="process_instances")
