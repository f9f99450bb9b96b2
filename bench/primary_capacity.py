"""How many engine steps one PostgreSQL primary carries: what a step costs the database,
measured, and the ceiling that follows at 1, 8 and 32 cores (docs/scaling.md).

Runs one shape through the engine alone (``bench.engine_throughput``'s processes and
driver) with 1 and 2 clients and prints, per step: statements, transactions, WAL bytes and
records (the whole server's, and this database's own read back with pg_waldump), the CPU of
this database's PostgreSQL backends and of the client, rows written per table and index
entries. Then measures the disk's sustained write rate and, from those figures, the
projection: the CPU ceiling (cores x utilisation x scaling efficiency / CPU per step) and the
WAL ceiling (write rate / WAL bytes per step); the lower is where one primary saturates.

    python -m bench.primary_capacity [--shape sequential] [--instances 300] [--url URL]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from bench.engine_throughput import SHAPES, plain_dsn, prepare
from bench.machine import _cpu_model
from bench.step_cost import WAL_DIR, StepCost, measure

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_scale_capacity"
CHOICES = {"sequential": 0, "fork-join": 1, "call-activity": 2, "multi-instance": 3}
#: The share of a primary's cores the projection lets steps use: the rest is autovacuum,
#: checkpoints, the WAL writer and senders, the scans and reads, and headroom for bursts.
UTILISATION = 0.7
#: Assumed, not measured (this machine has 2 cores): the share of linear scaling PostgreSQL
#: keeps for this write-heavy, small-transaction load. Lost to WAL insertion locks, the right
#: edges of the history tables' indexes (ids from one sequence) and of the tokens' (time-
#: ordered ids), snapshot building over more backends, and the one history sequence.
EFFICIENCY = {1: 1.0, 8: 0.85, 32: 0.6}
#: A sequential write of this many MiB, one fdatasync per MiB, as the WAL writer flushes.
WRITE_MIB = 128


def write_rate(directory: Path) -> float:
    """MiB/s of a plain sequential write with a flush per MiB, in ``directory``."""
    block = os.urandom(1 << 20)
    with tempfile.NamedTemporaryFile(dir=directory) as f:
        started = time.perf_counter()
        for _ in range(WRITE_MIB):
            f.write(block)
            f.flush()
            os.fdatasync(f.fileno())
        return WRITE_MIB / (time.perf_counter() - started)


def fsync_rate(directory: Path) -> float | None:
    """8 kB fdatasync'd writes per second (pg_test_fsync, 1 s): the commit flush rate one
    backend alone gets, before group commit shares a flush between commits."""
    exe = shutil.which("pg_test_fsync") or "/usr/lib/postgresql/15/bin/pg_test_fsync"
    if not Path(exe).exists():
        return None
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        out = subprocess.run(
            [exe, "-s", "1", "-f", str(Path(tmp) / "fsync.test")],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    match = re.search(r"fdatasync\s+([0-9.]+) ops/sec", out)
    return float(match.group(1)) if match else None


def print_cost(clients: int, c: StepCost) -> None:
    own = c.own_wal
    print(f"\n{clients} client(s): {c.steps} steps in {c.seconds:.2f} s = {c.steps_per_s:.0f}/s")
    print(f"  statements/step          {c.statements:8.2f}")
    print(f"  transactions/step        {c.transactions:8.2f}   (pg_stat_database)")
    print(f"  PostgreSQL CPU ms/step   {c.pg_cpu_ms:8.3f}   (this database's backends)")
    print(f"  client CPU ms/step       {c.client_cpu_ms:8.3f}   (engine, this process)")
    print(f"  WAL bytes/step, server   {c.wal_bytes:8.0f}   (pg_current_wal_lsn difference)")
    if c.wal_records is not None:
        print(f"  WAL records/step, server {c.wal_records:8.1f}   (pg_stat_wal)")
    if own is not None:
        print(f"  WAL bytes/step, own      {own.bytes / c.steps:8.0f}   (pg_waldump, own database)")
        print(f"  WAL records/step, own    {own.records / c.steps:8.1f}")
        print(f"  index entries/step       {own.index_inserts / c.steps:8.1f}   (btree inserts)")
        print(f"  full-page images/step    {own.full_pages / c.steps:8.2f}")
    print(f"  index entries/step bound {c.index_entries:8.1f}   (rows x indexes, non-HOT)")
    print(f"  other databases' active backends at start: {c.other_active}")
    print(f"  {'rows/step':24} {'inserted':>9} {'updated':>8} {'HOT':>6} {'deleted':>8}")
    for table, (ins, upd, hot, dele) in c.rows.items():
        print(f"  {table:24} {ins:9.2f} {upd:8.2f} {hot:6.2f} {dele:8.2f}")


def project(cost: StepCost, mib_s: float, fsyncs: float | None, url: str) -> None:
    own = cost.own_wal
    # This database's own WAL where pg_waldump read it; else the whole server's.
    wal = own.bytes / cost.steps if own is not None and own.bytes else cost.wal_bytes
    with psycopg.connect(plain_dsn(url)) as conn:
        row = conn.execute("SHOW max_connections").fetchone()
    print("\nProjection for one primary (from the 1-client figures):")
    print(f"  CPU per step {cost.pg_cpu_ms:.3f} ms, utilisation {UTILISATION:.0%}")
    print(f"  WAL per step {wal:.0f} bytes; disk {mib_s:.0f} MiB/s sequential with a flush a MiB")
    if fsyncs is not None:
        print(f"  pg_test_fsync: {fsyncs:.0f} 8 kB fdatasync/s (one committer, no group commit)")
    wal_ceiling = mib_s * 2**20 / wal
    print(f"  {'cores':>5} {'efficiency':>10} {'CPU ceiling':>12} {'WAL ceiling':>12} {'limit':>6}")
    for cores, eff in EFFICIENCY.items():
        cpu_ceiling = cores * UTILISATION * eff * 1000 / cost.pg_cpu_ms
        limit = "CPU" if cpu_ceiling < wal_ceiling else "WAL"
        print(f"  {cores:5d} {eff:10.2f} {cpu_ceiling:10.0f}/s {wal_ceiling:10.0f}/s {limit:>6}")
    tx = cost.transactions
    print(f"  commits/s at the WAL ceiling: {wal_ceiling * tx:.0f} ({tx:.2f} a step)")
    print(f"  max_connections: {row[0] if row else '?'} (each step holds one while it runs)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", choices=list(CHOICES), default="sequential")
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    name, key, steps = SHAPES[CHOICES[args.shape]]
    print(
        f"bpm primary capacity: {name}, {args.instances} instances a run; "
        f"{os.cpu_count()} cores, {_cpu_model()}"
    )
    costs = {}
    for clients in (1, 2):
        db, registry, counters = prepare(args.url, clients)
        costs[clients] = measure(
            db, registry, counters, args.url, (key, steps), args.instances, clients
        )
        db.dispose()
        print_cost(clients, costs[clients])
    target = WAL_DIR.parent.parent if os.access(WAL_DIR.parent.parent, os.W_OK) else Path("/tmp")
    mib_s = write_rate(target)
    print(f"\nstorage: sequential write in {target}: {mib_s:.0f} MiB/s")
    project(costs[1], mib_s, fsync_rate(target), args.url)


if __name__ == "__main__":
    main()
