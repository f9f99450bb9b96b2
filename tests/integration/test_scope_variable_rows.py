"""The store's statements for local variables, instance variables and a token's lock, which
PostgreSQL runs straight through the driver and SQLite through SQLAlchemy: both must store
and read back every JSON value alike, upsert by (scope token, scope node, name), and end a
scope's variables by name."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select, text

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.store import Database, local_variables, schema, tokens, variables
from bpm.store.db import DatabaseRefused
from bpm.store.ids import new_id
from bpm.store.migrate import upgrade

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
VALUES: dict[str, Any] = {
    "none": None,
    "text": "ein Wert",
    "int": 3,
    "float": 2.5,
    "flag": True,
    "list": [1, {"a": None}, "x"],
    "map": {"nested": {"x": [1, 2]}, "empty": {}},
    "quote": 'it\'s "quoted" % s',
}


@pytest.fixture(params=["pg", "lite"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "pg":
        yield request.getfixturevalue("pg_db")
        return
    lite = Database(f"sqlite:///{tmp_path / 'rows.db'}")
    upgrade(lite)
    try:
        yield lite
    finally:
        lite.dispose()


def _instance(db: Database) -> tuple[UUID, UUID]:
    """An instance row and its root token row, as the engine writes them."""
    engine = Engine(db, InProcessDispatcher())
    b = ProcessBuilder("rows").start().user_task("wait").end()
    engine.deploy(b.sequence("start", "wait", "end").build())
    started = engine.start("rows")
    with db.transaction() as conn:
        token_id = conn.execute(
            select(schema.tokens.c.id).where(schema.tokens.c.instance_id == started.id)
        ).scalar_one()
    return started.id, token_id


def test_local_variables_round_trip_every_json_value_by_scope(db: Database) -> None:
    instance_id, token_id = _instance(db)
    other = new_id()
    with db.transaction() as conn:
        local_variables.write_scopes(
            conn,
            instance_id,
            {(token_id, "sub"): VALUES, (other, "body"): {"loopCounter": 0, "none": None}},
            NOW,
        )
    with db.transaction() as conn:
        mine = local_variables.of_tokens(conn, instance_id, [token_id])
        every = local_variables.of_instance(conn, instance_id)
    assert {r.name: r.value for r in mine} == VALUES
    assert {(r.scope_token_id, r.scope_node_id) for r in mine} == {(token_id, "sub")}
    assert len(every) == len(VALUES) + 2
    assert {r.name: r.value for r in every if r.scope_token_id == other} == {
        "loopCounter": 0,
        "none": None,
    }


def test_writing_a_local_variable_again_replaces_it_and_counts_its_version(db: Database) -> None:
    instance_id, token_id = _instance(db)
    for value in (1, {"two": 2}):
        with db.transaction() as conn:
            local_variables.write(conn, instance_id, token_id, "sub", {"n": value}, NOW)
    with db.transaction() as conn:
        rows = local_variables.of_tokens(conn, instance_id, [token_id])
        version = conn.execute(
            text("SELECT version FROM local_variables WHERE name = 'n'")
        ).scalar_one()
    assert [(r.name, r.value) for r in rows] == [("n", {"two": 2})]
    assert version == 2


def test_ending_a_scope_deletes_its_variables_only_and_names_them(db: Database) -> None:
    instance_id, token_id = _instance(db)
    with db.transaction() as conn:
        local_variables.write_scopes(
            conn,
            instance_id,
            {(token_id, "sub"): {"b": 1, "a": 2}, (token_id, "other"): {"c": 3}},
            NOW,
        )
    with db.transaction() as conn:
        names = local_variables.end(conn, instance_id, token_id, "sub")
    with db.transaction() as conn:
        left = local_variables.of_instance(conn, instance_id)
        assert local_variables.end(conn, instance_id, token_id, "sub") == []
    assert names == ["a", "b"]
    assert [(r.scope_node_id, r.name, r.value) for r in left] == [("other", "c", 3)]


def test_instance_variables_and_a_token_lock_read_as_written(db: Database) -> None:
    instance_id, token_id = _instance(db)
    with db.transaction() as conn:
        variables.write(conn, instance_id, VALUES, NOW)
    with db.transaction() as conn:
        loaded = variables.load(conn, instance_id)
        some = variables.load(conn, instance_id, ["int", "none"])
        locked = tokens.lock(conn, token_id, instance_id)
        read = tokens.get(conn, token_id)
        missing = tokens.lock(conn, new_id(), instance_id)
    assert loaded == VALUES
    assert some == {"int": 3, "none": None}
    assert locked == read and locked is not None and locked.id == token_id
    assert missing is None


def test_a_non_finite_local_value_is_refused_on_postgresql_and_stores_nothing(
    pg_db: Database,
) -> None:
    instance_id, token_id = _instance(pg_db)
    with pytest.raises(DatabaseRefused, match="json"), pg_db.transaction() as conn:
        local_variables.write(
            conn, instance_id, token_id, "sub", {"ok": 1, "big": [float("inf")]}, NOW
        )
    with pg_db.transaction() as conn:
        assert local_variables.of_instance(conn, instance_id) == []
