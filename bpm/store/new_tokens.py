"""New tokens and their links: written at once (SQLite), or with the write batch's
statement on PostgreSQL (``bpm.store.batch``), whose JSON rows these are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Connection

from bpm.store.db import raw_one
from bpm.store.json_rows import encode_rows
from bpm.store.rows import TokenRow
from bpm.store.schema import token_links
from bpm.store.schema import tokens as t
from bpm.store.tokens import COLUMNS

#: The columns a new token is written with, those of ``TokenRow`` (``nudged_at`` starts NULL).
_NEW = tuple(str(c.name) for c in COLUMNS)
_NEW_LIST = ",".join(_NEW)
#: New tokens and their links in one statement: the links' foreign keys are checked at the
#: statement's end, when its tokens exist.
INSERT_PG = (
    f"WITH k AS (INSERT INTO tokens ({_NEW_LIST}) SELECT {_NEW_LIST} "
    f"FROM jsonb_populate_recordset(NULL::tokens, %(k)s::jsonb)), "
    f"l AS (INSERT INTO token_links (parent_token_id,child_token_id,link_type) "
    f"SELECT parent_token_id,child_token_id,link_type "
    f"FROM jsonb_populate_recordset(NULL::token_links, %(l)s::jsonb)) SELECT 1"
)


def insert(
    conn: Connection, rows: Sequence[TokenRow], links: Sequence[tuple[UUID, UUID, str]] = ()
) -> None:
    """New tokens, and links (parent, child, kind) that may name them, written now. On
    PostgreSQL one statement however many rows (a step's new tokens usually go with its
    write batch instead, ``WriteBatch.insert_tokens``)."""
    if conn.dialect.name == "postgresql":
        raw_one(conn, INSERT_PG, insert_params(rows, links))
        return
    conn.execute(t.insert(), [{c: getattr(r, c) for c in _NEW} for r in rows])
    link(conn, links)


def insert_params(
    rows: Sequence[TokenRow], links: Sequence[tuple[UUID, UUID, str]]
) -> dict[str, Any]:
    """The JSON rows of new tokens (``k``) and links (``l``), for ``INSERT_PG`` or the write
    batch's statement."""
    new = [{c: getattr(r, c) for c in _NEW} for r in rows]
    linked = [{"parent_token_id": p, "child_token_id": c, "link_type": k} for p, c, k in links]
    return {"k": encode_rows(new), "l": encode_rows(linked)}


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
