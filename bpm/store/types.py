"""Column types that behave the same on PostgreSQL and on SQLite (embedded mode)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class JsonText(TypeDecorator[Any]):
    """JSON kept as TEXT on SQLite.

    A column declared ``JSON`` gets NUMERIC affinity in SQLite, which turns the text ``2.0`` into
    the integer 2 and a 20-digit integer into a float; TEXT affinity keeps the JSON as written.
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str:
        return json.dumps(value, separators=(",", ":"))

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


#: JSONB on PostgreSQL, JSON as TEXT elsewhere.
JsonValue = JsonText().with_variant(JSONB(), "postgresql")

#: bigserial on PostgreSQL; SQLite only autoincrements an INTEGER primary key.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """A ``timestamptz`` that always comes back timezone-aware in UTC.

    SQLite has no time zones; storing naive UTC and re-attaching UTC on the way out keeps the
    engine's comparisons correct in embedded mode.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise ValueError(f"bpm stores timezone-aware datetimes only, got {value!r}")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
        return value.astimezone(UTC)  # type: ignore[no-any-return]
