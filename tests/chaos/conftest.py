"""Fixtures for the chaos suite: private servers for the session, a fresh database, ledger,
queue prefix and set of processes for each test.

Nothing here touches the machine's own PostgreSQL or Redis: the test crashes its servers, so
they are its own (tests/chaos/services.py). Teardown always runs: processes are killed by
process group, servers stopped and their directories removed, even after a failure.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from uuid import uuid4

import pytest

from bpm.store import Database
from bpm.store.migrate import upgrade
from tests.chaos import handlers
from tests.chaos.cluster import ChaosCluster
from tests.chaos.faults import Faults
from tests.chaos.services import PrivatePostgres, PrivateRedis
from tests.conftest import CLONE_PREFIX, create_database, drop_database
from tests.helpers.tcp_proxy import TcpProxy

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "chaos_template"


@dataclass
class Services:
    pg: PrivatePostgres
    redis: PrivateRedis
    proxy: TcpProxy

    def restore(self) -> None:
        """Bring back whatever a fault interrupted halfway left down."""
        if not self.pg.running():
            self.pg.start()
        if self.redis.proc is None or self.redis.proc.poll() is not None:
            self.redis.start()
        self.proxy.restore()


@pytest.fixture(scope="session")
def chaos_services() -> Iterator[Services]:
    """A private PostgreSQL (with a migrated template database), a private Redis with an
    append-only file, and the proxy the workers reach PostgreSQL through."""
    # A CI job that is cancelled gets SIGTERM, which would end pytest on the spot and leave
    # the servers and workers running: make it unwind like Ctrl-C, through every teardown.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    pg, redis = PrivatePostgres(), PrivateRedis()
    proxy: TcpProxy | None = None
    try:
        pg.init()
        pg.start()
        pg.create_database(TEMPLATE)
        db = Database(pg.url(TEMPLATE))
        try:
            upgrade(db)
        finally:
            db.dispose()
        redis.start()
        proxy = TcpProxy("127.0.0.1", pg.port)
        yield Services(pg, redis, proxy)
    finally:
        try:
            if proxy is not None:
                proxy.close()
        finally:
            try:
                redis.stop()
            finally:
                pg.stop()
                signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@dataclass
class ChaosRun:
    """What one chaos test works with."""

    services: Services
    cluster: ChaosCluster
    faults: Faults
    db: Database  # straight to PostgreSQL, for the test's own reads
    database: str
    direct_url: str
    ledger: str
    logs: Path


def _env(services: Services, database: str, prefix: str, ledger: str) -> dict[str, str]:
    """The environment of every engine process: the database through the proxy, the
    private broker, this test's queue prefix, short scan periods (recovery in seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPM_")}
    env.update(
        {
            "BPM_DATABASE_URL": services.pg.url(
                database, driver="postgresql", port=services.proxy.port
            ),
            "BPM_BROKER_URL": services.redis.url,
            "BPM_QUEUE_PREFIX": prefix,
            "BPM_IMPORTS": "tests.chaos.handlers",
            # Recovery within seconds, with a grace longer than a queue's normal wait: at 2 s
            # (as in tests/workers/) the backlog after an outage made every queued token look
            # stalled, each scan sent them all again, and the queues never drained
            # (docs/chaos.md).
            "BPM_SCAN_INTERVAL": "2",
            "BPM_STALL_GRACE": "10",
            "BPM_TIMER_INTERVAL": "1",
            # A start held by a killed worker comes back after this (docs/distributed.md); the
            # default, 600 s, would outlast the test.
            "BPM_VISIBILITY_TIMEOUT": "15",
            "BPM_CHAOS_LEDGER": ledger,
            "PYTHONPATH": str(ROOT),
        }
    )
    return env


@pytest.fixture
def chaos(chaos_services: Services, tmp_path: Path) -> Iterator[ChaosRun]:
    database = f"chaos_{uuid4().hex[:8]}"
    chaos_services.pg.create_database(database, template=TEMPLATE)
    direct = chaos_services.pg.url(database)
    ledger_db = f"{CLONE_PREFIX}{os.getpid()}_ledger_{uuid4().hex[:8]}"
    ledger = create_database(ledger_db)  # on the machine's PostgreSQL, outside the faults
    handlers.create(ledger)
    env = _env(chaos_services, database, f"c{uuid4().hex[:8]}.", ledger)
    cluster = ChaosCluster(env, tmp_path, ROOT)
    faults = Faults(chaos_services.pg, chaos_services.redis, chaos_services.proxy, cluster)
    db = Database(direct, pool_size=2)
    try:
        yield ChaosRun(chaos_services, cluster, faults, db, database, direct, ledger, tmp_path)
    finally:
        try:
            cluster.stop()
        finally:
            db.dispose()
            drop_database(ledger_db)
            chaos_services.restore()
