"""The CLI against a real, freshly created PostgreSQL database: upgrade, deploy, run, trace."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

from bpm.demo import ORDER_FULFILMENT
from tests.cli.conftest import ENV_VARS, command, one_error_line

SERVER = make_url(
    os.environ.get("BPM_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_test")
)


def _admin(statement: sql.Composed) -> None:
    url = SERVER.set(drivername="postgresql", database="postgres")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(statement)


@pytest.fixture
def fresh_pg() -> Iterator[str]:
    """An empty database (no schema) on the test server, dropped afterwards."""
    name = f"bpm_cli_{uuid4().hex[:10]}"
    _admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield SERVER.set(database=name).render_as_string(hide_password=False)
    finally:
        _admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_cli_on_postgres__upgrade_deploy_start_trace(fresh_pg: str, tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ENV_VARS},
        "BPM_DATABASE_URL": fresh_pg,
        "BPM_IMPORTS": "bpm.demo.order_handlers",
    }

    def bpm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command(*args),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    refused = bpm("instances")
    assert refused.returncode != 0
    assert "bpm db upgrade" in one_error_line(refused.stderr)
    upgraded = bpm("db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert "INFO" not in upgraded.stderr and "upgraded" in upgraded.stdout
    assert "already at revision" in bpm("db", "upgrade").stdout
    assert bpm("deploy", str(ORDER_FULFILMENT), "--json").returncode == 0
    started = bpm(
        "start",
        "order_fulfilment",
        "--var",
        "total=99.5",
        "--var",
        'items=["a"]',
        "--var",
        "payment_glitch=true",
        "--business-key",
        "PG-1",
        "--wait",
        "30",
        "--json",
    )
    assert started.returncode == 0, started.stderr
    doc = json.loads(started.stdout)
    assert doc["state"] == "COMPLETED" and doc["business_key"] == "PG-1"
    traced = bpm("trace", doc["id"], "--json")
    events = json.loads(traced.stdout)
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    # charge is a branch its fork's run took on: reserved, then its first run begun
    # (LOCK_EXTENDED), then locked again for its second attempt
    charge = [e for e in events if e["node_id"] == "charge" and "LOCK" in e["type"]]
    assert [e["data"].get("attempt") for e in charge] == [None, 1, 2]
    assert "ship_standard" in {e["node_id"] for e in events}
