"""What one engine step costs the database: statements, transactions, WAL, the CPU of the
bench database's own PostgreSQL backends and of the client, and the rows each table took.
Shared by ``bench/primary_capacity.py`` and ``bench/partitioned.py``; the driving itself is
``bench.engine_throughput``'s.

WAL figures come from ``pg_current_wal_lsn()`` and ``pg_stat_wal``, which count the whole
server: on a machine where other databases work they include that work, so each run also
reports how many other backends were active when it began.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench import cpu_use
from bench.engine_throughput import Counters, drive, plain_dsn
from bpm.handlers import HandlerRegistry
from bpm.store import Database

#: Where the bench's server keeps its WAL (Debian's PostgreSQL 15); elsewhere BPM_WAL_DIR.
WAL_DIR = Path(os.environ.get("BPM_WAL_DIR", "/var/lib/postgresql/15/main/pg_wal"))
_TABLE_STATS = (
    "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables"
)
_INDEXES = (
    "SELECT c.relname, count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
    "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' GROUP BY c.relname"
)


@dataclass
class StepCost:
    """Per step figures of one run, and the run's totals they come from."""

    steps: int
    seconds: float
    statements: float
    transactions: float
    wal_bytes: float
    wal_records: float | None
    #: This database's own WAL per step (pg_waldump), None where it cannot be read.
    own_wal: Wal | None
    pg_cpu_ms: float
    client_cpu_ms: float
    other_active: int
    #: table -> (inserted, updated, of them HOT, deleted) per step.
    rows: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    #: Index entries written per step: an insert or a non-HOT update writes one entry into
    #: each index of its table (partial indexes counted as full: an upper bound).
    index_entries: float = 0.0

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds


@dataclass(frozen=True)
class Wal:
    """The WAL one database's work wrote between two positions, read back with pg_waldump:
    records touching its relations, and every record of the transactions that did (their
    commits included)."""

    bytes: int
    records: int
    index_inserts: int
    full_pages: int


_RECORD = re.compile(r"rmgr: (\S+)\s+len \(rec/tot\):\s*\d+/\s*(\d+), tx:\s*(\d+), .*desc: (\S+)")


def waldump(oid: int, start: str, end: str) -> Wal | None:
    """The WAL of database ``oid`` from ``start`` to ``end`` (LSNs), or None where
    pg_waldump or the WAL directory cannot be read (a server on another machine)."""
    exe = shutil.which("pg_waldump") or "/usr/lib/postgresql/15/bin/pg_waldump"
    if not Path(exe).exists() or not WAL_DIR.is_dir() or start == end:
        return None
    done = subprocess.run(
        [exe, "-p", str(WAL_DIR), "-s", start, "-e", end],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(f"pg_waldump {start}..{end}: {done.stderr.strip()[:200]}")
        return None
    out = done.stdout
    ours = f" rel 1663/{oid}/"
    lines = [(m, line) for line in out.splitlines() if (m := _RECORD.search(line))]
    xids = {m.group(3) for m, line in lines if ours in line and m.group(3) != "0"}
    total = records = inserts = pages = 0
    for m, line in lines:
        if ours in line or m.group(3) in xids:
            total += int(m.group(2))
            records += 1
            inserts += m.group(1) == "Btree" and m.group(4).startswith("INSERT")
            pages += "FPW" in line
    return Wal(total, records, inserts, pages)


def backend_pids(dsn: str) -> set[int]:
    """The PostgreSQL backends connected to this database, other than the asking one."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return {int(r[0]) for r in rows}


def _server_state(conn: psycopg.Connection) -> dict[str, Any]:
    # Statistics are read from a snapshot taken once per transaction: a fresh one.
    conn.execute("SELECT pg_stat_clear_snapshot()")
    xacts = conn.execute(
        "SELECT xact_commit + xact_rollback FROM pg_stat_database "
        "WHERE datname = current_database()"
    ).fetchone()
    records: int | None
    try:
        row = conn.execute("SELECT wal_records FROM pg_stat_wal").fetchone()
        records = int(row[0]) if row else None
    except psycopg.errors.UndefinedTable:
        records = None
    tables = {r[0]: tuple(int(x) for x in r[1:]) for r in conn.execute(_TABLE_STATS)}
    return {
        "xacts": int(xacts[0]) if xacts else 0,
        "records": records,
        "tables": tables,
    }


def _lsn(conn: psycopg.Connection) -> tuple[int, str]:
    row = conn.execute(
        "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn, pg_current_wal_lsn()::text"
    ).fetchone()
    return (int(row[0]), str(row[1])) if row else (0, "0/0")


def _hold_wal(conn: psycopg.Connection) -> None:
    """Keep the run's WAL on disk until pg_waldump has read it: a checkpoint would recycle
    it while other databases write. A temporary slot, gone when this session ends."""
    try:
        conn.execute(
            "SELECT pg_create_physical_replication_slot(%s, true, true)",
            (f"bpm_bench_{os.getpid()}",),
        )
    except psycopg.Error as exc:  # no slot left, or no right to make one: read what remains
        print(f"WAL not held for pg_waldump: {exc}")


def _close_pool(db: Database, conn: psycopg.Connection) -> None:
    """Close the engine's connections and wait for their backends to exit (and so to
    report their statistics)."""
    db.engine.dispose()
    for _ in range(200):
        left = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchone()
        if not left or int(left[0]) == 0:
            break
        time.sleep(0.01)
    conn.execute("SELECT pg_stat_clear_snapshot()")


def other_active(conn: psycopg.Connection) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
        "AND datname IS DISTINCT FROM current_database() AND backend_type = 'client backend'"
    ).fetchone()
    return int(row[0]) if row else 0


def _parent(name: str) -> str:
    """A partition's table: ``tokens_p3`` and ``token_events_20261207`` are ``tokens`` and
    ``token_events`` (the bench's partitioned layout names them so)."""
    head, _, tail = name.rpartition("_")
    if head and (tail.isdigit() or tail == "default" or (tail[:1] == "p" and tail[1:].isdigit())):
        return head
    return name


def measure(
    db: Database,
    registry: HandlerRegistry,
    counters: Counters,
    url: str,
    shape: tuple[str, int],
    count: int,
    clients: int,
) -> StepCost:
    """Run ``count`` instances of ``shape`` (process key, steps per instance) with
    ``clients`` threads on a warmed pool and return what each step cost."""
    key, per_instance = shape
    dsn = plain_dsn(url)
    warm = max(clients, count // 10)
    with psycopg.connect(dsn, autocommit=True) as conn:
        indexes = {r[0]: int(r[1]) for r in conn.execute(_INDEXES)}
        busy = other_active(conn)
        # Backends report their counts when idle for a while or when they exit: the pool's
        # are closed at both ends of the run, so every count of the run is in (warm-up too).
        _close_pool(db, conn)
        _hold_wal(conn)
        before = _server_state(conn)
        drive(db, registry, key, warm, clients)  # warm caches and pool
        pids = backend_pids(dsn) - {conn.info.backend_pid}
        lsn_before = _lsn(conn)
        cpu_before = cpu_use.by_role([], pids)
        own_before = os.times()
        stmts = counters.statements
        seconds = drive(db, registry, key, count, clients)
        own_after = os.times()
        cpu_after = cpu_use.by_role([], pids | backend_pids(dsn))
        lsn_after = _lsn(conn)
        _close_pool(db, conn)
        after = _server_state(conn)
        oid = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()
        own = waldump(int(oid[0]), lsn_before[1], lsn_after[1]) if oid else None
    counted = ((count // clients) + (warm // clients)) * clients * per_instance
    steps = (count // clients) * clients * per_instance
    rows: dict[str, list[float]] = {}
    entries = 0.0
    for name, now in after["tables"].items():
        then = before["tables"].get(name, (0, 0, 0, 0))
        delta = [(a - b) / counted for a, b in zip(now, then, strict=True)]
        if any(delta):
            table = _parent(name)
            summed = rows.setdefault(table, [0.0, 0.0, 0.0, 0.0])
            rows[table] = [s + d for s, d in zip(summed, delta, strict=True)]
            entries += (delta[0] + delta[1] - delta[2]) * indexes.get(name, 0)
    records = (
        (after["records"] - before["records"]) / counted
        if after["records"] is not None and before["records"] is not None
        else None
    )
    client = (own_after.user + own_after.system) - (own_before.user + own_before.system)
    return StepCost(
        steps=steps,
        seconds=seconds,
        statements=(counters.statements - stmts) / steps,
        # PostgreSQL's own count, autocommitted statements included; the few statements of
        # this reading connection are in it too (a handful per run).
        transactions=(after["xacts"] - before["xacts"]) / counted,
        wal_bytes=(lsn_after[0] - lsn_before[0]) / steps,
        wal_records=records,
        own_wal=own,
        pg_cpu_ms=cpu_use.spent(cpu_before, cpu_after)["postgres"] * 1000 / steps,
        client_cpu_ms=client * 1000 / steps,
        other_active=busy,
        rows={t: (r[0], r[1], r[2], r[3]) for t, r in sorted(rows.items())},
        index_entries=entries,
    )
