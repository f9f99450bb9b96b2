"""A credential names the user it acts as and that user's groups (the cockpit's tasklist).

- api_credentials.user_id: the user id (NULL: the credential's name);
- api_credentials.groups: a JSON list of group ids (NULL: none).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_credentials") as batch_op:
        batch_op.add_column(sa.Column("user_id", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("groups", JsonValue, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_credentials") as batch_op:
        batch_op.drop_column("groups")
        batch_op.drop_column("user_id")
