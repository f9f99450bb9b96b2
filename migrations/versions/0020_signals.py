"""Signal broadcasts.

- definition_signal_subscriptions: per process definition, what a signal of each name
  reaches (a start event, a token waiting at a node, the root token), written at deploy.
- signals: one row per throw (name, variables, thrower, the request's key); finished_at set
  once every delivery is made.
- signal_deliveries: the recipients a throw snapshotted in its own transaction; each row is
  deleted in the transaction that delivers it.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue, UtcDateTime

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_TARGETS = "('START', 'NODE', 'ROOT', 'TOKEN')"


def upgrade() -> None:
    op.create_table(
        "definition_signal_subscriptions",
        sa.Column("definition_id", sa.Uuid(), nullable=False),
        sa.Column("signal", sa.Text(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.CheckConstraint(
            f"target IN {_TARGETS}", name=op.f("ck_definition_signal_subscriptions_target")
        ),
        sa.ForeignKeyConstraint(
            ["definition_id"],
            ["process_definitions.id"],
            name=op.f("fk_definition_signal_subscriptions_definition_id_process_definitions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "definition_id",
            "signal",
            "node_id",
            "target",
            name=op.f("pk_definition_signal_subscriptions"),
        ),
    )
    op.create_index(
        "ix_definition_signal_subscriptions_signal",
        "definition_signal_subscriptions",
        ["signal"],
    )
    op.create_table(
        "signals",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("variables", JsonValue, nullable=True),
        sa.Column("thrown_at", UtcDateTime(), nullable=False),
        sa.Column("instance_id", sa.Uuid(), nullable=True),
        sa.Column("token_id", sa.Uuid(), nullable=True),
        sa.Column("throw_key", sa.Text(), nullable=True),
        sa.Column("recipients", sa.Integer(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_signals")),
        sa.UniqueConstraint("throw_key", name=op.f("uq_signals_throw_key")),
    )
    where = sa.text("finished_at IS NULL")
    op.create_index(
        "ix_signals_unfinished",
        "signals",
        ["thrown_at"],
        postgresql_where=where,
        sqlite_where=where,
    )
    op.create_table(
        "signal_deliveries",
        sa.Column("signal_id", sa.Uuid(), nullable=False),
        sa.Column("target", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("token_version", sa.Integer(), nullable=True),
        sa.Column("instance_id", sa.Uuid(), nullable=True),
        sa.Column("node_id", sa.Text(), nullable=True),
        sa.CheckConstraint(f"kind IN {_TARGETS}", name=op.f("ck_signal_deliveries_kind")),
        sa.ForeignKeyConstraint(
            ["signal_id"],
            ["signals.id"],
            name=op.f("fk_signal_deliveries_signal_id_signals"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("signal_id", "target", name=op.f("pk_signal_deliveries")),
    )


def downgrade() -> None:
    op.drop_table("signal_deliveries")
    op.drop_index("ix_signals_unfinished", table_name="signals")
    op.drop_table("signals")
    op.drop_index(
        "ix_definition_signal_subscriptions_signal", table_name="definition_signal_subscriptions"
    )
    op.drop_table("definition_signal_subscriptions")
