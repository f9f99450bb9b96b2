"""New tokens and their links written at once: on SQLite, where the engine's steps write
them so, and on PostgreSQL by the write batch's own statement for new rows
(``NewRows.sent_alone``), where a step's usually go with its batch instead."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from sqlalchemy import Connection

from bpm.store.db import raw_one
from bpm.store.new_rows import NEW_TOKEN_COLUMNS, NewRows
from bpm.store.rows import TokenRow
from bpm.store.schema import token_links
from bpm.store.schema import tokens as t


def insert(
    conn: Connection, rows: Sequence[TokenRow], links: Sequence[tuple[UUID, UUID, str]] = ()
) -> None:
    """New tokens, and links (parent, child, kind) that may name them, written now. On
    PostgreSQL one statement however many rows."""
    if conn.dialect.name == "postgresql":
        raw_one(conn, *NewRows(tokens=list(rows), links=list(links)).sent_alone())
        return
    conn.execute(t.insert(), [{c: getattr(r, c) for c in NEW_TOKEN_COLUMNS} for r in rows])
    link(conn, links)


def link(conn: Connection, links: Sequence[tuple[UUID, UUID, str]]) -> None:
    """Links alone; on PostgreSQL one statement however many (a join links each branch it
    consumes)."""
    if links and conn.dialect.name == "postgresql":
        insert(conn, [], links)
    elif links:
        conn.execute(
            token_links.insert(),
            [
                {"parent_token_id": p, "child_token_id": c, "link_type": kind}
                for p, c, kind in links
            ],
        )
