"""Random (UUIDv4) against time-ordered (UUIDv7) row ids at a million rows: what an insert
costs once the primary key's index is large.

For each kind of id it fills a table shaped like ``tokens`` (a UUID primary key, an indexed
instance id, a few columns) with ``--rows`` rows in batches, then times ``--probe`` more
inserts in transactions of ``--batch`` rows (as the engine inserts a step's rows), and prints
the rows/s of that last stretch, the primary key's size, and the index blocks the probe read
from disk or PostgreSQL's buffers (``pg_statio_user_indexes``). Both tables live in one
database of their own, filled in the same run.

    python -m bench.id_locality [--rows 1000000] [--probe 50000] [--batch 10] [--url URL]
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import text

from bench.engine_throughput import fresh_database
from bpm.store import Database
from bpm.store.ids import new_id

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_ids"
KINDS: dict[str, Callable[[], uuid.UUID]] = {"uuid4": uuid.uuid4, "uuid7": new_id}
FILL = 20_000


def _table(db: Database, name: str) -> None:
    with db.transaction() as conn:
        conn.execute(
            text(
                f"CREATE TABLE {name} (id uuid PRIMARY KEY, instance_id uuid NOT NULL,"
                " node_id text NOT NULL, state text NOT NULL, version int NOT NULL,"
                " created_at timestamptz NOT NULL)"
            )
        )
        conn.execute(text(f"CREATE INDEX {name}_instance ON {name} (instance_id)"))


def _insert(db: Database, name: str, make: Callable[[], uuid.UUID], n: int, batch: int) -> float:
    """Seconds to insert ``n`` rows in transactions of ``batch`` rows."""
    stmt = text(
        f"INSERT INTO {name} (id, instance_id, node_id, state, version, created_at)"
        " VALUES (:id, :instance_id, 'task', 'ACTIVE', 1, :at)"
    )
    now = datetime.now(UTC)
    begun = time.perf_counter()
    for _ in range(0, n, batch):
        instance = make()
        rows = [{"id": make(), "instance_id": instance, "at": now} for _ in range(batch)]
        with db.transaction() as conn:
            conn.execute(stmt, rows)
    return time.perf_counter() - begun


def _index_reads(db: Database, name: str) -> tuple[int, int]:
    with db.transaction() as conn:
        row = conn.execute(
            text(
                "SELECT idx_blks_read, idx_blks_hit FROM pg_statio_user_indexes"
                " WHERE indexrelname = :index"
            ),
            {"index": f"{name}_pkey"},
        ).one()
    return int(row[0]), int(row[1])


def _size(db: Database, name: str) -> str:
    with db.transaction() as conn:
        found = conn.execute(text(f"SELECT pg_size_pretty(pg_relation_size('{name}_pkey'))"))
        return str(found.scalar_one())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--probe", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    fresh_database(args.url)
    db = Database(args.url)
    print(f"{args.rows:,} rows filled, then {args.probe:,} inserted {args.batch} per transaction")
    print(f"{'ids':6} {'fill s':>8} {'probe rows/s':>13} {'pkey size':>10} {'idx blocks read':>16}")
    for kind, make in KINDS.items():
        name = f"ids_{kind}"
        _table(db, name)
        fill = _insert(db, name, make, args.rows, FILL)
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"VACUUM ANALYZE {name}"))
        read_before, _ = _index_reads(db, name)
        probe = _insert(db, name, make, args.probe, args.batch)
        read_after, _ = _index_reads(db, name)
        rate = args.probe / probe
        print(
            f"{kind:6} {fill:8.1f} {rate:13.0f} {_size(db, name):>10}"
            f" {read_after - read_before:16,}"
        )
    db.dispose()


if __name__ == "__main__":
    main()
