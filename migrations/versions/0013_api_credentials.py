"""Credentials of the HTTP API (``bpm serve``).

- api_credentials: one row per caller: its name (the Basic user name), its role, the topics
  (workers) or process keys (starters) it is limited to, NULL for none, and the scrypt hash of
  its secret. Every server process reads the same rows, so any number of servers share them.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue, UtcDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

ROLES = ("WORKER", "STARTER", "VIEWER", "OPERATOR")


def upgrade() -> None:
    op.create_table(
        "api_credentials",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("topics", JsonValue, nullable=True),
        sa.Column("processes", JsonValue, nullable=True),
        sa.Column("secret_hash", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint(
            "role IN (" + ", ".join(f"'{r}'" for r in ROLES) + ")",
            name=op.f("ck_api_credentials_role"),
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_api_credentials")),
    )


def downgrade() -> None:
    op.drop_table("api_credentials")
