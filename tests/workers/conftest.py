"""Fixtures that start real Celery processes against this test's database and queues."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from bpm.store import Database
from tests.workers.cluster import REDIS_URL, Cluster
from tests.workers.handlers import CREATE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster(pg_url: str, tmp_path: Path) -> Iterator[Cluster]:
    prefix = f"t{uuid4().hex[:8]}."
    env = {
        **os.environ,
        "BPM_DATABASE_URL": pg_url,
        "BPM_BROKER_URL": REDIS_URL,
        "BPM_TEST_REDIS_URL": REDIS_URL,
        "BPM_QUEUE_PREFIX": prefix,
        "BPM_IMPORTS": "tests.workers.handlers",
        "BPM_SCAN_INTERVAL": "1",
        "BPM_STALL_GRACE": "2",
        "PYTHONPATH": str(ROOT),
    }
    db = Database(pg_url)
    with db.transaction() as conn:
        conn.exec_driver_sql(CREATE)
    c = Cluster(env, tmp_path, db)
    try:
        yield c
    finally:
        c.stop()
        db.dispose()
