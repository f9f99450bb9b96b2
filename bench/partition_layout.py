"""bpm's schema converted to a partitioned layout, for the scaling experiment
(``bench/partitioned.py``, docs/scaling.md): the runtime tables a step writes hashed by
instance id, the history tables ranged by day. The engine's queries are not changed, so what
the layout costs them is what a sharded deployment would cost them before they carry the
instance id.

PostgreSQL's partitioning forces three things, each reported by ``convert``: a primary key or
unique index must include the partition key (the key is widened, or the unique index dropped
when widening would change what it guarantees); a foreign key can only reference a unique
key, so one to a hashed table's ``id`` alone cannot exist; and a row must land in a
partition, so the history tables get a DEFAULT partition beside the daily ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import psycopg
from psycopg import sql

#: Runtime tables keyed by instance: HASH (instance_id). ``process_instances`` stays whole:
#: its idempotent insert is ON CONFLICT (process_key, idempotency_key), a unique key without
#: the instance id. ``local_variables`` stays whole: its upsert's conflict target
#: (scope_token_id, scope_node_id, name) has no instance id. ``token_links`` has no
#: instance_id column at all.
HASHED = (
    "tokens",
    "external_tasks",
    "variables",
    "timers",
    "incidents",
    "compensation_records",
    "task_comments",
)
#: Append-only history: RANGE (at), one partition a day.
BY_TIME = ("token_events", "task_events", "engine_events")
#: Daily history partitions made around today: this many days before and after it.
DAYS_AROUND = 3


@dataclass
class Conversion:
    """What the conversion had to change, for the bench to print."""

    widened: list[str] = field(default_factory=list)
    dropped_unique: list[str] = field(default_factory=list)
    dropped_foreign: list[str] = field(default_factory=list)
    kept_foreign: int = 0


def _key_of(table: str) -> str:
    return "instance_id" if table in HASHED else "at"


def _columns(definition: str) -> list[str]:
    """The column list of a ``PRIMARY KEY (a, b)`` or ``UNIQUE (a, b)`` definition."""
    inside = definition[definition.index("(") + 1 : definition.rindex(")")]
    return [c.strip() for c in inside.split(",")]


def _day_partitions(conn: psycopg.Connection, table: str, today: date) -> None:
    for offset in range(-DAYS_AROUND, DAYS_AROUND + 1):
        day = today + timedelta(days=offset)
        conn.execute(
            sql.SQL("CREATE TABLE {} PARTITION OF {} FOR VALUES FROM ({}) TO ({})").format(
                sql.Identifier(f"{table}_{day:%Y%m%d}"),
                sql.Identifier(f"{table}__p"),
                sql.Literal(datetime(day.year, day.month, day.day, tzinfo=UTC)),
                sql.Literal(datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(1)),
            )
        )
    # A row of another day (a test clock, a late import) still has somewhere to go.
    conn.execute(
        sql.SQL("CREATE TABLE {} PARTITION OF {} DEFAULT").format(
            sql.Identifier(f"{table}_default"), sql.Identifier(f"{table}__p")
        )
    )


def _rebuild(conn: psycopg.Connection, table: str, partitions: int, done: Conversion) -> None:
    """``table`` replaced by a partitioned copy with its rows, keys and indexes."""
    key = _key_of(table)
    keys = conn.execute(
        "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype IN ('p', 'u')",
        (table,),
    ).fetchall()
    owned = {name for name, _, _ in keys}
    indexes = [
        text
        for name, text in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
            "AND tablename = %s",
            (table,),
        ).fetchall()
        if name not in owned
    ]
    method = "HASH (instance_id)" if key == "instance_id" else "RANGE (at)"
    conn.execute(
        sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) ").format(
            sql.Identifier(f"{table}__p"), sql.Identifier(table)
        )
        + sql.SQL("PARTITION BY " + method)
    )
    if key == "instance_id":
        for i in range(partitions):
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {} PARTITION OF {} FOR VALUES WITH (MODULUS {}, REMAINDER {})"
                ).format(
                    sql.Identifier(f"{table}_p{i}"),
                    sql.Identifier(f"{table}__p"),
                    sql.Literal(partitions),
                    sql.Literal(i),
                )
            )
    else:
        _day_partitions(conn, table, datetime.now(UTC).date())
    conn.execute(
        sql.SQL("INSERT INTO {} SELECT * FROM {}").format(
            sql.Identifier(f"{table}__p"), sql.Identifier(table)
        )
    )
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
    conn.execute(
        sql.SQL("ALTER TABLE {} RENAME TO {}").format(
            sql.Identifier(f"{table}__p"), sql.Identifier(table)
        )
    )
    for name, kind, definition in keys:
        columns = _columns(definition)
        if key in columns:
            conn.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
        elif kind == "p":
            # The id stays first, so a read by id alone still walks each partition's index.
            wider = ", ".join([*columns, key])
            conn.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" PRIMARY KEY ({wider})')
            done.widened.append(f"{table}: PRIMARY KEY ({', '.join(columns)}) -> ({wider})")
        else:
            conn.execute(f'CREATE INDEX "{name}" ON "{table}" ({", ".join(columns)})')
            done.dropped_unique.append(f"{table}: {definition} (now a plain index)")
    for text in indexes:
        conn.execute(text)


def convert(conn: psycopg.Connection, partitions: int = 16) -> Conversion:
    """Convert a migrated, empty or not, bpm database in one transaction."""
    done = Conversion()
    tables = (*HASHED, *BY_TIME)
    foreign = conn.execute(
        "SELECT conname, conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE contype = 'f' AND (conrelid::regclass::text = ANY(%s) "
        "OR confrelid::regclass::text = ANY(%s))",
        (list(tables), list(tables)),
    ).fetchall()
    with conn.transaction():
        for name, table, _ in foreign:
            conn.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
        for table in tables:
            _rebuild(conn, table, partitions, done)
        for name, table, definition in foreign:
            try:
                with conn.transaction():
                    conn.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
                done.kept_foreign += 1
            except psycopg.errors.InvalidForeignKey:
                done.dropped_foreign.append(f"{table}: {definition}")
    return done
