"""Schema drift: the migrations build exactly ``bpm.store.schema.metadata``.

On a fresh PostgreSQL database and on SQLite: upgrade, compare with the metadata, downgrade to
base, upgrade again. Alembic's comparison does not look at CHECK constraints or partial index
predicates, so those are compared separately against the metadata on PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import CheckConstraint, Index, inspect, text

from bpm.errors import ConfigError
from bpm.store import Database
from bpm.store.migrate import (
    current_revision,
    downgrade,
    head_revision,
    require_current,
    upgrade,
)
from bpm.store.schema import metadata

QUOTED = re.compile(r"'([^']*)'")


def schema_diff(db: Database) -> list[Any]:
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, metadata))


def bpm_tables(db: Database) -> set[str]:
    return set(inspect(db.engine).get_table_names()) - {"alembic_version"}


def assert_current(db: Database) -> None:
    assert current_revision(db) == head_revision(db)
    require_current(db)
    assert bpm_tables(db) == set(metadata.tables)
    diff = schema_diff(db)
    assert diff == [], "migrations and bpm.store.schema disagree:\n" + "\n".join(map(str, diff))


@pytest.fixture
def pg(empty_pg_url: str) -> Iterator[Database]:
    db = Database(empty_pg_url)
    try:
        yield db
    finally:
        db.dispose()


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Database]:
    db = Database(f"sqlite:///{tmp_path / 'schema.db'}")
    try:
        yield db
    finally:
        db.dispose()


@pytest.mark.parametrize("dialect", ["pg", "lite"])
def test_upgrade_downgrade_upgrade_round_trips(
    dialect: str, request: pytest.FixtureRequest
) -> None:
    db: Database = request.getfixturevalue(dialect)
    with pytest.raises(ConfigError, match="has no bpm schema"):
        require_current(db)

    upgrade(db)
    assert_current(db)

    downgrade(db, "base")
    assert bpm_tables(db) == set()
    assert current_revision(db) is None
    if db.is_postgres:
        with db.engine.connect() as conn:
            left = conn.execute(
                text(
                    "SELECT relname FROM pg_class WHERE relkind = 'S' "
                    "AND relnamespace = 'public'::regnamespace"
                )
            ).all()
        assert left == []  # the history sequence went too

    upgrade(db)
    assert_current(db)
    upgrade(db)  # at head already: nothing to do
    assert_current(db)


def test_check_constraints_match_the_metadata(pg: Database) -> None:
    """Python's state lists and the database's CHECK constraints are the same lists."""
    upgrade(pg)
    with pg.engine.connect() as conn:
        found = {
            name: definition
            for name, definition in conn.execute(
                text(
                    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                    "WHERE contype = 'c' AND conrelid <> 0 "
                    "AND connamespace = 'public'::regnamespace"
                )
            )
        }
    expected = 0
    for table in metadata.tables.values():
        for constraint in table.constraints:
            if not isinstance(constraint, CheckConstraint):
                continue
            expected += 1
            name = str(constraint.name)
            assert name in found, f"{name} is missing from the database"
            ours = set(QUOTED.findall(str(constraint.sqltext)))
            theirs = set(QUOTED.findall(found[name]))
            assert ours == theirs, f"{name}: metadata allows {ours}, database {theirs}"
    assert expected == len(found)


def test_partial_indexes_match_the_metadata(pg: Database) -> None:
    upgrade(pg)
    with pg.engine.connect() as conn:
        indexdefs = {
            name: definition
            for name, definition in conn.execute(
                text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'")
            )
        }
    partial = [
        ix
        for table in metadata.tables.values()
        for ix in table.indexes
        if isinstance(ix, Index) and ix.dialect_options["postgresql"]["where"] is not None
    ]
    assert len(partial) >= 6
    for ix in partial:
        definition = indexdefs[str(ix.name)]
        where = str(ix.dialect_options["postgresql"]["where"])
        assert " WHERE " in definition, definition
        predicate = definition.split(" WHERE ", 1)[1]
        assert set(QUOTED.findall(predicate)) == set(QUOTED.findall(where)), (
            ix.name,
            where,
            definition,
        )
        for column in re.findall(r"\b([a-z_]+)\s*(?:=|IN)", where):
            assert column in predicate, (ix.name, column, definition)


def test_history_tables_share_one_sequence_on_postgres(pg: Database) -> None:
    upgrade(pg)
    with pg.engine.connect() as conn:
        defaults: dict[str, str] = dict(
            conn.execute(
                text(
                    "SELECT table_name, column_default FROM information_schema.columns "
                    "WHERE column_name = 'id' AND table_name LIKE '%\\_events'"
                )
            ).all()
        )
    assert set(defaults) == {"token_events", "task_events", "engine_events"}
    assert all("bpm_history_seq" in str(d) for d in defaults.values()), defaults
