"""Alembic environment: runs against the connection or URL that ``bpm db upgrade`` passes."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from bpm.store.db import database_url
from bpm.store.schema import metadata

config = context.config


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_with(connection)
        return
    engine = create_engine(database_url(config.get_main_option("sqlalchemy.url") or None))
    with engine.begin() as conn:
        _run_with(conn)
    engine.dispose()


def _run_with(connection: Connection) -> None:
    context.configure(
        connection=connection, target_metadata=metadata, render_as_batch=True, compare_type=True
    )
    with context.begin_transaction():
        context.run_migrations()


run()
