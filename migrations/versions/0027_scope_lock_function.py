"""bpm_lock_with_children(): a scope's lock and its live children in one round trip.

A scope deciding about its branches (a parallel join, a multi-instance body, a saga) locks its
instance's row, then its own token's, and only then reads its live children: a child that
committed while the scope waited for a lock must be seen, or a join whose last branch parked
during the wait would never fire. One plain statement cannot do that, since it reads with the
snapshot taken when it began, before the wait. In a VOLATILE PL/pgSQL function each
statement takes a fresh snapshot, so the children's read begins once both locks are held,
as a second statement would, without its round trip.

Returns the locked token first, then its live children oldest first (as token rows are
read); nothing when the token or its instance does not exist. The live states are those of
the partial index on ``parent_token_id``, as literals, so that the index serves the read.
PostgreSQL only: SQLite's writers take turns at the database.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


#: The columns returned, those a token row is read with (``bpm.store.rows.TokenRow``), written
#: out rather than ``SETOF tokens`` so that the function does not pin the table's row type (a
#: table rebuilt, as a partitioned layout does, would have to drop it first).
_COLUMNS = (
    ("id", "uuid"),
    ("instance_id", "uuid"),
    ("node_id", "text"),
    ("state", "text"),
    ("mode", "text"),
    ("parent_token_id", "uuid"),
    ("scope_id", "text"),
    ("concurrent", "boolean"),
    ("via_flow", "text"),
    ("wait_kind", "text"),
    ("version", "integer"),
    ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
    ("record_id", "uuid"),
    ("waits_for", "integer"),
)
ROW = ", ".join(f"{name} {kind}" for name, kind in _COLUMNS)
COLUMNS = ", ".join(name for name, _ in _COLUMNS)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"""
        CREATE OR REPLACE FUNCTION bpm_lock_with_children(scope_token uuid, of_instance uuid)
        RETURNS TABLE ({ROW})
        LANGUAGE plpgsql VOLATILE AS $$
        #variable_conflict use_column
        BEGIN
            PERFORM 1 FROM process_instances WHERE id = of_instance FOR NO KEY UPDATE;
            IF NOT FOUND THEN
                RETURN;
            END IF;
            RETURN QUERY SELECT {COLUMNS} FROM tokens WHERE id = scope_token FOR NO KEY UPDATE;
            IF NOT FOUND THEN
                RETURN;
            END IF;
            RETURN QUERY SELECT {COLUMNS} FROM tokens
                WHERE parent_token_id = scope_token AND state IN ('ACTIVE', 'WAITING', 'FAILED')
                ORDER BY created_at, id;
        END
        $$
    """)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION IF EXISTS bpm_lock_with_children(uuid, uuid)")
