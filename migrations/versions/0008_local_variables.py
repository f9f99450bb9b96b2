"""Local variables: variables that belong to a scope instead of the whole instance.

- local_variables: one row per (scope token, scope node, name). A scope is an activity or
  subprocess while a token is at it; its rows are deleted, with a history row, when the token
  leaves that node.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue, UtcDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "local_variables",
        sa.Column("instance_id", sa.Uuid(), sa.ForeignKey("process_instances.id"), nullable=False),
        sa.Column("scope_token_id", sa.Uuid(), nullable=False),
        sa.Column("scope_node_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("value", JsonValue, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("scope_token_id", "scope_node_id", "name"),
    )
    op.create_index("ix_local_variables_instance", "local_variables", ["instance_id"])


def downgrade() -> None:
    op.drop_index("ix_local_variables_instance", table_name="local_variables")
    op.drop_table("local_variables")
