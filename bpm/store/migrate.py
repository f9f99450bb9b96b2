"""Applying the Alembic migrations (``bpm db upgrade``) and checking a database is current."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from bpm.errors import ConfigError
from bpm.store.db import Database


def script_location() -> str:
    """The migrations folder: ``migrations/`` in a checkout, ``bpm/_migrations`` when installed."""
    checkout = Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").exists():
        return str(checkout)
    return str(resources.files("bpm") / "_migrations")


def alembic_config(db: Database) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", script_location())
    cfg.set_main_option("sqlalchemy.url", db.url.replace("%", "%%"))
    return cfg


def upgrade(db: Database, revision: str = "head") -> None:
    cfg = alembic_config(db)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(db: Database, revision: str) -> None:
    cfg = alembic_config(db)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def head_revision(db: Database) -> str | None:
    return ScriptDirectory.from_config(alembic_config(db)).get_current_head()


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def require_current(db: Database) -> None:
    """Refuse to run against a database whose schema is missing or behind the code."""
    current, head = current_revision(db), head_revision(db)
    if current != head:
        state = "has no bpm schema" if current is None else f"is at revision {current}"
        raise ConfigError(
            f"database {db.safe_url} {state}, the code needs {head}: run `bpm db upgrade`"
        )
