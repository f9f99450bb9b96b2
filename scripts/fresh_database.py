"""Drop and re-create the test database named by a PostgreSQL URL (``make testdb``)."""

from __future__ import annotations

import sys

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url


def main(url: str) -> None:
    parsed = make_url(url)
    name = parsed.database
    if not name:
        raise SystemExit(f"error: {url!r} names no database")
    admin = parsed.set(drivername="postgresql", database="postgres")
    dsn = admin.render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    print(f"fresh test database {name!r} on {parsed.host}:{parsed.port or 5432}")


if __name__ == "__main__":
    main(sys.argv[1])
