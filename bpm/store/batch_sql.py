"""The one write statement of a batch (``bpm.store.batch``) on PostgreSQL: data-modifying
CTEs over JSON arrays (encoded by ``json_rows``), one per kind of write, built once per
combination of parts. Apart from ``batch`` so the SQL it sends can be read (and checked
against psycopg's parse cache) on its own.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from bpm.store import tasks
from bpm.store.history import COMMON_COLUMNS, EXTRA_COLUMNS, TABLES
from bpm.store.schema import external_tasks

#: The columns of external_tasks a new task row is built from, straight from the table's type.
#: A new task is never locked, so the credential of a lock is left to its default (NULL): only
#: a fetch or a lock sets it, and the statement stays within psycopg's parse cache. Plain
#: ``str``: SQLAlchemy's names are a subclass, which orjson refuses as a key (the row would
#: be encoded the slow way).
TASK_COLUMNS = tuple(str(c.name) for c in external_tasks.c if c.name != "lock_credential")
_TOKEN = (
    ("id", "uuid"),
    ("expected", "int"),
    ("state", "text"),
    ("node_id", "text"),
    ("via_flow", "text"),
    ("wait_kind", "text"),
    ("waits_for", "int"),
    ("version", "int"),
    ("updated_at", "timestamptz"),
)


def _rows_of(param: str, table: str) -> str:
    """Rows shaped like ``table``'s (its column names and types) from a JSON array."""
    return f"jsonb_populate_recordset(NULL::{table}, %({param})s::jsonb) AS u"


def task_row(params: dict[str, Any]) -> dict[str, Any]:
    """A guarded task change (``tasks.finish_params``) under the table's column names."""
    row = {k: v for k, v in params.items() if k not in ("b_id", "b_version", "now")}
    return {
        **row,
        "id": params["b_id"],
        "version": params["b_version"],
        "updated_at": params["now"],
    }


def _recordset(param: str, columns: tuple[tuple[str, str], ...]) -> str:
    spec = ", ".join(f"{name} {kind}" for name, kind in columns)
    return f"jsonb_to_recordset(%({param})s::jsonb) AS u({spec})"


_END = (
    ("id", "uuid"),
    ("state", "text"),
    ("now", "timestamptz"),
    ("ended_at", "timestamptz"),
    ("only_from", "jsonb"),
    ("k", "int"),
)
#: Makes an update wait for the instance row locks of ``ie`` before it locks its own rows.
_AFTER_IE = "AND (SELECT count(*) FROM ie) >= 0"
_HISTORY = (
    ("k", "int"),
    ("tbl", "text"),
    ("instance_id", "uuid"),
    ("at", "timestamptz"),
    ("type", "text"),
    ("node_id", "text"),
    ("from_state", "text"),
    ("to_state", "text"),
    ("actor", "text"),
    ("data", "jsonb"),
    ("token_id", "uuid"),
    ("task_id", "uuid"),
    ("cause", "text"),
)


#: The parts a write statement can have; each batch sends only those it needs (a CTE over an
#: empty array still costs the server its executor set-up), see ``flush_sql``.
PARTS = frozenset({"ie", "tu", "ti", "vu", "ku", "i", "k", "l", "tb", "notify", "read", *TABLES})
#: The history row of a reserved task's run begun (``tb``): written only if it began.
BEGUN_ROW = "tb"


def parts_of(parts: frozenset[str]) -> set[tuple[str, str]]:
    """The history table each part other than a history table's own writes a row to."""
    return {("task", "tb")} if "tb" in parts else set()


@cache
def flush_sql(parts: frozenset[str]) -> str:
    """The write statement for a batch with these parts (``PARTS``)."""
    # Kept terse: the whole statement must stay within psycopg's cached-query length.
    sets = ",".join(
        f"{c}=u.{c}"
        for c in (
            "state",
            "retry_at",
            "lock_owner",
            "lock_expire_at",
            "error_message",
            "error_details",
            "retries",
            "attempts",
        )
    )
    after_ie = _AFTER_IE if "ie" in parts else ""
    history = [name for name in TABLES if name in parts or (name, "tb") in parts_of(parts)]
    ctes = []
    if history:
        ctes.append("base AS (SELECT nextval('bpm_history_seq') AS b)")
    if "ie" in parts:
        # Instance state changes lock the instance row first, as set_instance_state does
        # before any token or task row, so this statement takes locks in the engine's order.
        ctes.append(
            f"ie AS (UPDATE process_instances p SET state = u.state, version = p.version + 1, "
            f"updated_at = u.now, ended_at = u.ended_at FROM {_recordset('ie', _END)}, LATERAL "
            f"(SELECT o.state FROM process_instances o WHERE o.id = u.id FOR NO KEY UPDATE) old "
            f"WHERE p.id = u.id AND u.only_from ? old.state AND old.state <> u.state "
            f"RETURNING p.id, old.state AS old_state, u.k)"
        )
    if history:
        ctes.append(f"h AS MATERIALIZED (SELECT * FROM {_recordset('h', _HISTORY)})")
    if "tu" in parts:
        ctes.append(
            f"tu AS (UPDATE external_tasks t SET {sets}, version = t.version + 1, "
            f"updated_at = u.updated_at FROM {_rows_of('tu', 'external_tasks')} "
            f"WHERE t.id = u.id AND t.version = u.version "
            f"AND t.id = ANY(%(tui)s::uuid[]) {after_ie} RETURNING t.id)"
        )
    if "ti" in parts:
        # Named columns: a column a later migration adds gets its default, not NULL. The
        # lists have no spaces: the statement stays short enough for psycopg's parse cache.
        ctes.append(
            f"ti AS (INSERT INTO external_tasks ({','.join(TASK_COLUMNS)}) SELECT "
            f"{','.join(TASK_COLUMNS)} FROM {_rows_of('ti', 'external_tasks')})"
        )
    if "vu" in parts:
        ctes.append(
            f"vu AS (INSERT INTO variables (instance_id, name, value, version, updated_at) "
            # a JSON null value reads back from the recordset as SQL NULL: it is JSON's null
            f"SELECT u.instance_id, u.name, COALESCE(u.value,'null'), 1, u.updated_at "
            f"FROM {_rows_of('vu', 'variables')} "
            f"ON CONFLICT (instance_id, name) DO UPDATE SET value = excluded.value, "
            f"version = variables.version + 1, updated_at = excluded.updated_at)"
        )
    for part, table in (("i", "process_instances"), ("k", "tokens"), ("l", "token_links")):
        # New instances, tokens and links: every column (a new column of these tables, if
        # any, is NULL here), their foreign keys checked at the statement's end. A start
        # whose key another start took inserts nothing, and the guard undoes the rest.
        if part in parts:
            rows = f"jsonb_populate_recordset(NULL::{table},%({part})s::jsonb)"
            key = "(process_key,idempotency_key)"
            tail = f" ON CONFLICT {key} DO NOTHING RETURNING id" if part == "i" else ""
            ctes.append(f"n{part} AS (INSERT INTO {table} SELECT * FROM {rows}{tail})")
    if "ku" in parts:
        ctes.append(
            f"ku AS (UPDATE tokens k SET state = u.state, node_id = u.node_id, "
            f"via_flow = u.via_flow, wait_kind = u.wait_kind, waits_for = u.waits_for, "
            f"version = u.version, "
            f"updated_at = u.updated_at FROM {_recordset('ku', _TOKEN)} "
            f"WHERE k.id = u.id AND k.version = u.expected "
            f"AND k.id = ANY(%(kui)s::uuid[]) {after_ie} RETURNING k.id)"
        )
    if "tb" in parts:
        # A reserved task's run begins if it is still as reserved; a miss changes nothing
        # and fails nothing (it was offered again, or cancelled, meanwhile).
        ctes.append(f"tb AS ({tasks.BEGIN_RESERVED_ID_PG})")
    for i, name in enumerate(history):
        columns = [c for c in (*COMMON_COLUMNS, *EXTRA_COLUMNS[name]) if c != "k"]
        values = [
            c
            if (c, name) != ("from_state", "engine") or "ie" not in parts
            else "COALESCE(from_state, (SELECT ie.old_state FROM ie WHERE ie.k = h.k))"
            for c in columns
        ]
        # The row of a reserved run begun (``tb``) is written only if it began.
        begun = (
            f" OR h.tbl='{BEGUN_ROW}' AND EXISTS(SELECT FROM tb)"
            if (name, "tb") in parts_of(parts)
            else ""
        )
        ctes.append(
            f"h_{i} AS (INSERT INTO {TABLES[name].name} (id,{','.join(columns)}) "
            f"SELECT base.b + h.k,{','.join(values)} "
            f"FROM base, h WHERE h.tbl = '{name}'{begun})"
        )
    if "notify" in parts:
        ctes.append(
            "n AS (SELECT pg_notify('" + tasks.NOTIFY_CHANNEL + "', topic) "
            "FROM unnest(%(notify)s::text[]) AS topic)"
        )
    # A guarded update that missed fails the whole statement (see bpm_guard_miss); otherwise
    # the statement returns the read-back variables (as they were before it wrote).
    # (the part, its CTE, the number of rows it must write)
    guarded = [
        (g, "ni" if g == "i" else g, f"%(n{g})s") for g in ("tu", "ku", "ie", "i") if g in parts
    ]
    guard = (
        "NULL"
        if not guarded
        else (
            "CASE WHEN "
            + " OR ".join(f"(SELECT count(*) FROM {c}) <> {n}" for _, c, n in guarded)
            + " THEN bpm_guard_miss(json_build_object("
            + ", ".join(f"'{g}', (SELECT array_agg(id) FROM {c})" for g, c, _ in guarded)
            + ")::text) END"
        )
    )
    read = (
        (
            "(SELECT jsonb_object_agg(v.name, v.value) FROM variables v "
            "WHERE v.instance_id = %(ri)s::uuid)"
        )
        if "read" in parts
        else "NULL"
    )
    notified = "(SELECT count(*) FROM n)" if "notify" in parts else "0"
    left = (
        "(SELECT jsonb_object_agg(ie.k::text, ie.old_state) FROM ie)" if "ie" in parts else "NULL"
    )
    begun = "(SELECT count(*) FROM tb)" if "tb" in parts else "0"
    return (
        "WITH " + ", ".join(ctes) + " " if ctes else ""
    ) + f"SELECT {read}, {guard}, {notified}, {left}, {begun}"


#: The longest statements a batch sends: every part, but a batch that ends its instance
#: begins no reserved run (the end cancelled the instance's tasks, the reserved ones too)
#: and, but for rare paths, creates no token (a new token is live: the instance goes on);
#: a start's (``i``) changes no row that existed before it. A rare longer one still runs;
#: psycopg parses its text each time.
LONGEST = (
    flush_sql(PARTS - {"tb", "i", "k", "l"}),
    flush_sql(PARTS - {"ie", "i"}),
    flush_sql(PARTS - {"ie", "tu", "ku", "tb"}),
)
