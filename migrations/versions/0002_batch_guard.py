"""bpm_guard_miss(): lets one statement refuse its own writes.

The engine writes a step as one statement of data-modifying CTEs; its version-checked updates
report which rows they changed. When one missed (someone else moved the row first), the
statement calls this function, which raises SQLSTATE BPM01 with the changed ids as JSON, so the
whole statement is undone even when it runs as its own transaction (autocommit), saving the
BEGIN and COMMIT round trips. PostgreSQL only: SQLite writes one statement at a time inside an
explicit transaction.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("""
        CREATE OR REPLACE FUNCTION bpm_guard_miss(changed text) RETURNS boolean
        LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            RAISE EXCEPTION USING ERRCODE = 'BPM01', MESSAGE = changed;
        END
        $$
    """)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION IF EXISTS bpm_guard_miss(text)")
