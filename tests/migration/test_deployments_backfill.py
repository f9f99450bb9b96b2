"""Migration 0014 gives every definition deployed before it a deployment of its own, holding
the file it came from, so every definition belongs to one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pytest
from sqlalchemy import text

from bpm.store import Database
from bpm.store.migrate import upgrade

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(params=["pg", "lite"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (
        request.getfixturevalue("empty_pg_url")
        if request.param == "pg"
        else f"sqlite:///{tmp_path / 'backfill.db'}"
    )
    found = Database(url)
    try:
        yield found
    finally:
        found.dispose()


def test_existing_definitions_get_a_deployment_each(db: Database) -> None:
    upgrade(db, "0013")
    process, decision = uuid4(), uuid4()
    graph = {"key": "old", "versionTag": "v7", "nodes": [], "flows": []}
    with db.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO process_definitions (id, key, name, version, graph, source,"
                " source_format, checksum, created_at) VALUES (:id, 'old', 'Old', 1, :graph,"
                " '<bpmn/>', 'bpmn', 'c1', :at)"
            ),
            {
                "id": process if db.is_postgres else process.hex,
                "graph": json.dumps(graph),
                "at": WHEN,
            },
        )
        conn.execute(
            text(
                "INSERT INTO decision_definitions (id, key, name, version, source, checksum,"
                " created_at) VALUES (:id, 'rules', 'Rules', 1, '<dmn/>', 'c2', :at)"
            ),
            {"id": decision if db.is_postgres else decision.hex, "at": WHEN},
        )
    upgrade(db)
    with db.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT p.resource, p.version_tag, d.name, d.source, r.name, r.content"
                " FROM process_definitions p JOIN deployments d ON d.id = p.deployment_id"
                " JOIN deployment_resources r ON r.deployment_id = d.id"
            )
        ).all()
        decisions = conn.execute(
            text(
                "SELECT r.name, r.content FROM decision_definitions x"
                " JOIN deployment_resources r ON r.deployment_id = x.deployment_id"
            )
        ).all()
    assert [tuple(r[:5]) for r in rows] == [("old.bpmn", "v7", "old", "migration 0014", "old.bpmn")]
    assert bytes(rows[0][5]) == b"<bpmn/>"
    assert [(r[0], bytes(r[1])) for r in decisions] == [("rules.dmn", b"<dmn/>")]
