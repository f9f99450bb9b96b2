"""The database a process test runs on: one per pytest-xdist worker, created and migrated
once, emptied between tests. Part of ``bpm.testing``, which re-exports it."""

from __future__ import annotations

import os

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from bpm.errors import ConfigError
from bpm.store import Database, database_url
from bpm.store.migrate import upgrade
from bpm.store.schema import metadata

DEFAULT_TEST_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_user_tests"


def database_url_for_tests() -> str:
    """``BPM_TEST_DATABASE_URL`` (default ``DEFAULT_TEST_DATABASE_URL``), one database per
    pytest-xdist worker so parallel workers never truncate each other's rows."""
    url = make_url(
        database_url(os.environ.get("BPM_TEST_DATABASE_URL") or DEFAULT_TEST_DATABASE_URL)
    )
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        url = url.set(database=f"{url.database}_{worker}")
    return url.render_as_string(hide_password=False)


def prepare_test_database(url: str) -> None:
    """Create the database if it does not exist yet, and migrate it to the current schema."""
    parsed = make_url(database_url(url))
    if parsed.get_backend_name() != "postgresql" or not parsed.database:
        raise ConfigError(
            f"the bpm test database must be a PostgreSQL database, not {parsed.render_as_string()}"
        )
    admin = create_engine(parsed.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": parsed.database}
            ).first()
            if found is None:
                quoted = conn.dialect.identifier_preparer.quote(parsed.database)
                try:
                    conn.execute(text(f"CREATE DATABASE {quoted}"))
                except DBAPIError as exc:  # another session created it first: fine
                    if getattr(exc.orig, "sqlstate", None) != "42P04":
                        raise
    finally:
        admin.dispose()
    db = Database(url)
    try:
        upgrade(db)
    finally:
        db.dispose()


def truncate_bpm_tables(db: Database) -> None:
    """Delete every row of every bpm table (definitions and history too), keeping the schema:
    much faster than re-creating the database for each test."""
    if not db.is_postgres:
        raise ConfigError("truncate_bpm_tables needs PostgreSQL")
    names = ", ".join(
        db.engine.dialect.identifier_preparer.quote(t.name) for t in metadata.sorted_tables
    )
    with db.transaction() as conn:
        conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
