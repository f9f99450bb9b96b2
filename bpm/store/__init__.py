"""The persistence gateway: the only package that talks SQL.

Functions here take a ``Connection`` that the caller's transaction owns and never commit; the
engine opens one transaction per use case with ``Database.transaction()``.
"""

from bpm.store.db import (
    Connection,
    Database,
    DatabaseRefused,
    DatabaseUnavailable,
    RetryableDatabaseError,
    database_url,
)

__all__ = [
    "Connection",
    "Database",
    "DatabaseRefused",
    "DatabaseUnavailable",
    "RetryableDatabaseError",
    "database_url",
]
