"""Connecting to PostgreSQL (production) or SQLite (embedded mode)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DataError,
    DBAPIError,
    DisconnectionError,
    OperationalError,
)
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.expression import ClauseElement

from bpm.errors import BpmError, ConfigError, InputRefused
from bpm.limits import quoted

__all__ = [
    "Connection",
    "Database",
    "DatabaseRefused",
    "DatabaseUnavailable",
    "RetryableDatabaseError",
    "database_url",
]

DEFAULT_URL = "sqlite:///bpm.db"
#: deadlock_detected, serialization_failure, lock_not_available: worth another try.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001", "55P03"})
#: admin_shutdown, crash_shutdown, cannot_connect_now (a server stopping, or in recovery);
#: every state of class 08 (connection exception) counts too.
UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
#: data_exception (a value too long, out of range, not valid text) and
#: program_limit_exceeded (an index row too large): the statement's values are refused, and
#: sending them again can never succeed.
REFUSED_SQLSTATE_CLASSES = ("22", "54")
#: Seconds a pooled connection may rest before it is checked on its next use: shorter than
#: any server restart, so no connection that missed one goes unchecked.
IDLE_BEFORE_PING = 1.0
#: What the server says at connect time to a URL that is wrong rather than a server that is
#: away (libpq gives these no SQLSTATE): waiting would never help, so they are not outages.
CONFIGURATION_ERRORS = (
    "does not exist",
    "authentication failed",
    "no pg_hba.conf entry",
    "password authentication",
    "is not permitted to log in",
)
#: libpq settings that make a cut network fail a connection within seconds instead of the
#: kernel's two hours, so a job waiting on a dead peer gives up and tries again.
NETWORK_TIMEOUTS: dict[str, int] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}


class RetryableDatabaseError(BpmError):
    """The database aborted the transaction for a reason that a retry can fix."""


class DatabaseUnavailable(BpmError):
    """PostgreSQL could not be reached, or dropped the connection: a server restart, a crash,
    a cut network. Whether the transaction committed is unknown when it broke at COMMIT, so
    what retries it must be idempotent (every engine job is)."""


class DatabaseRefused(InputRefused):
    """PostgreSQL refused the values a statement carries (too long, out of range, a NUL, an
    index row too large): the input is wrong, not the database, so it is final."""


def database_url(url: str | None = None) -> str:
    """The URL to use: the argument, else ``BPM_DATABASE_URL``, else ``./bpm.db`` (SQLite).

    A plain ``postgresql://`` URL is upgraded to the psycopg 3 driver.
    """
    raw = url or os.environ.get("BPM_DATABASE_URL") or DEFAULT_URL
    for prefix in ("postgresql://", "postgres://"):
        if raw.startswith(prefix):
            raw = "postgresql+psycopg://" + raw[len(prefix) :]
    return raw


class Database:
    """A SQLAlchemy engine plus what the store needs to know about its dialect."""

    def __init__(self, url: str | None = None, *, pool_size: int = 10, echo: bool = False) -> None:
        self.url = database_url(url)
        try:
            parsed = make_url(self.url)
        except ArgumentError as exc:
            raise ConfigError(f"BPM_DATABASE_URL {self.url!r} is not a database URL") from exc
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("postgresql", "sqlite"):
            raise ConfigError(
                f"database {self.dialect!r} is not supported: use postgresql or sqlite"
            )
        self.engine = self._create(parsed.database or "", pool_size, echo)

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    def _create(self, database: str, pool_size: int, echo: bool) -> Engine:
        if self.is_postgres:
            # JIT compilation pays off for long analytical queries, never for the engine's
            # short ones: left on, it added ~20 ms to fetch-and-lock whenever the planner's
            # cost estimate crossed jit_above_cost.
            # UTC sessions: rows read past SQLAlchemy (raw_*) come back in UTC like those
            # its UtcDateTime type converts.
            options = "-c jit=off -c timezone=UTC"
            engine = create_engine(
                self.url,
                pool_size=pool_size,
                max_overflow=pool_size,
                echo=echo,
                pool_recycle=3600,
                connect_args={"options": options, **NETWORK_TIMEOUTS},
            )
            _ping_idle_connections(engine)
            _deferred_write_first(engine)
            return engine
        memory = database in ("", ":memory:")
        kwargs: dict[str, Any] = {"poolclass": StaticPool} if memory else {}
        engine = create_engine(
            self.url, echo=echo, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs
        )
        _sqlite_transactions(engine)
        return engine

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One database transaction: commits on success, rolls back on any exception.

        A deadlock or serialization failure comes out as ``RetryableDatabaseError``; a
        server that cannot be reached, or a connection that broke, as ``DatabaseUnavailable``;
        values the database refuses (``refused``) as ``DatabaseRefused``.
        """
        try:
            with self.engine.begin() as conn:
                try:
                    yield conn
                    if (write := take_deferred(conn)) is not None:  # no statement took it
                        raw_one(conn, *write())
                finally:
                    if not conn.invalidated:  # a lost connection's info is gone with it
                        conn.info.pop(DEFERRED_WRITE, None)
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) in RETRYABLE_SQLSTATES:
                raise RetryableDatabaseError(str(exc.orig)) from exc
            if refused(exc):
                raise DatabaseRefused(
                    f"the database refused a value: {quoted(_first_line(exc.orig), 200)}"
                ) from exc
            if self.is_postgres and unavailable(exc):
                raise DatabaseUnavailable(
                    f"the database {self.safe_url} is unavailable: {_first_line(exc.orig)}"
                ) from exc
            raise

    def check_reachable(self) -> None:
        try:
            with self.engine.connect():
                pass
        except OperationalError as exc:
            raise ConfigError(f"cannot connect to {self.safe_url}: {exc.orig}") from exc

    @property
    def safe_url(self) -> str:
        return make_url(self.url).render_as_string(hide_password=True)

    def dispose(self) -> None:
        self.engine.dispose()


def unavailable(exc: DBAPIError) -> bool:
    """Whether a PostgreSQL error means the server is gone rather than the statement wrong."""
    if exc.connection_invalidated:
        return True
    state = getattr(exc.orig, "sqlstate", None)
    if state is None:  # refused or timed out before any server answered, or turned away
        text = str(exc.orig)
        return isinstance(exc, OperationalError) and not any(
            sign in text for sign in CONFIGURATION_ERRORS
        )
    return str(state).startswith("08") or state in UNAVAILABLE_SQLSTATES


def refused(exc: DBAPIError) -> bool:
    """Whether the database refused the statement's values rather than failed: a data
    exception or a limit of the database exceeded (the driver's own ``DataError``, such as a
    NUL it cannot send, counts too)."""
    state = getattr(exc.orig, "sqlstate", None)
    if state is not None:
        return str(state)[:2] in REFUSED_SQLSTATE_CLASSES
    return isinstance(exc, DataError)


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _ping_idle_connections(engine: Engine) -> None:
    """Check a pooled connection before use when it sat idle for ``IDLE_BEFORE_PING``.

    After a server restart every pooled connection is dead, and the first transaction to take
    one would fail. A restart takes longer than that idle time, so only a connection that rested
    long enough to have missed one is pinged: a busy process pays no round trip per
    transaction, as ``pool_pre_ping`` would make it. A connection that dies while in use
    fails its transaction as ``DatabaseUnavailable``, and SQLAlchemy then renews the whole pool.
    """

    @event.listens_for(engine, "checkin")
    def _rested(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _check(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < IDLE_BEFORE_PING:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception:
            alive = False
        if not alive:  # the pool drops it and opens a new one
            raise DisconnectionError("the server closed this pooled connection")


def _sqlite_transactions(engine: Engine) -> None:
    """Make SQLite take its write lock at BEGIN, so concurrent writers wait instead of failing.

    pysqlite's own transaction handling is switched off and SQLAlchemy's BEGIN becomes
    BEGIN IMMEDIATE, as the SQLAlchemy docs recommend for SQLite.
    """

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


#: ``Connection.info`` key of a write the transaction deferred (``defer_write``).
DEFERRED_WRITE = "bpm.deferred_write"
#: A deferred write: its SQL (a statement that returns a row) and parameters, asked for when
#: it is sent.
Deferred = Callable[[], tuple[str, dict[str, Any]]]


def defer_write(conn: Connection, write: Deferred) -> None:
    """PostgreSQL: send ``write`` just before the transaction's next statement, whichever
    it is, or before its commit.

    New rows (a fork's tokens) are written this way: the write batch, when it comes next,
    takes the write into its own statement (``take_deferred``), which saves a round trip
    and, for a step whose only other statement is the batch, its BEGIN and COMMIT too. Any
    other statement first sends it on its own, so every statement sees the rows as if they
    had been written at once. A later deferral replaces the earlier one: the caller's write
    covers everything deferred so far."""
    conn.info[DEFERRED_WRITE] = write


def take_deferred(conn: Connection) -> Deferred | None:
    """The deferred write, no longer to be sent by itself: the caller sends it."""
    write: Deferred | None = conn.info.pop(DEFERRED_WRITE, None)
    return write


def _deferred_write_first(engine: Engine) -> None:
    """A statement sent through SQLAlchemy sends the transaction's deferred write first, on
    the same cursor (an error comes out as the statement's own would)."""

    @event.listens_for(engine, "before_cursor_execute")
    def _first(
        conn: Connection, cursor: Any, _sql: str, _params: Any, _ctx: Any, _many: bool
    ) -> None:
        write = take_deferred(conn)
        if write is not None:
            cursor.execute(*write())


@contextmanager
def first_statement_commits(conn: Connection) -> Iterator[bool]:
    """Let the next statement be its own transaction if nothing else was sent in this one.

    psycopg starts a transaction lazily, at the first statement; when the engine's only
    statement is its write batch (which undoes itself on any miss), running it in autocommit
    saves the BEGIN and COMMIT round trips, and the later COMMIT finds nothing to do. A plain
    read that comes first (a complete reads its task) can run so too: it holds no lock, and
    under READ COMMITTED it sees what it would inside. Yields whether that happened; on
    SQLite, or after other statements, it changes nothing.
    """
    if conn.dialect.name != "postgresql":
        yield False
        return
    from psycopg.pq import TransactionStatus  # only installed with the postgres extra

    raw = conn.connection.dbapi_connection
    if raw is None or raw.info.transaction_status != TransactionStatus.IDLE:
        yield False
        return
    if DEFERRED_WRITE in conn.info:  # sent first, it must share the statement's transaction
        yield False
        return
    raw.autocommit = True
    try:
        yield True
    finally:
        if not raw.broken:  # a lost connection is invalidated by _raw; leave it alone
            raw.autocommit = False


def raw_one(conn: Connection, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    """PostgreSQL only: run one statement on the psycopg connection under ``conn`` (same
    transaction) and return its first row.

    For the engine's hottest statements: building a SQLAlchemy statement and result costs
    about 0.3 ms of CPU per call, five times the query itself on a local server, and that
    CPU is what limits external-task throughput. Errors come out as SQLAlchemy's
    ``DBAPIError``, as from ``conn.execute``, and a lost connection is invalidated; SQL echo
    and SQLAlchemy's execution events do not see these statements.
    """
    row: tuple[Any, ...] | None = _raw(conn, sql, params, many=False)
    return row


def raw_all(conn: Connection, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """``raw_one``, every row."""
    rows: list[tuple[Any, ...]] = _raw(conn, sql, params, many=True)
    return rows


def uuid_array(ids: Iterable[UUID]) -> str:
    """Ids as an array literal for ``raw_one``, cast in the statement (``::uuid[]``): adapting
    a Python list costs the driver far more than the text (it inspects every element to pick
    the array's type)."""
    return "{" + ",".join(map(str, ids)) + "}"


def _raw(conn: Connection, sql: str, params: dict[str, Any], many: bool) -> Any:
    raw = conn.connection.driver_connection
    assert raw is not None
    if (write := take_deferred(conn)) is not None:
        _raw(conn, *write(), many=False)
    try:
        cursor = raw.execute(sql, params)
        return cursor.fetchall() if many else cursor.fetchone()
    except raw.Error as exc:  # psycopg.Error, without importing the postgres extra
        raise _wrapped(conn, raw, sql, params, exc) from exc


def _wrapped(conn: Connection, raw: Any, sql: str, params: Any, exc: Exception) -> Exception:
    """A driver's error as SQLAlchemy's, as ``conn.execute`` raises it; a lost connection is
    invalidated."""
    lost = bool(raw.broken)
    if lost:
        conn.invalidate(exc)
    return DBAPIError.instance(sql, params, exc, raw.Error, connection_invalidated=lost)


def pg_sql(statement: ClauseElement) -> str:
    """A SQLAlchemy statement as psycopg SQL text, for ``raw_one``; bind parameters keep
    their names (``bindparam("id")`` becomes ``%(id)s``)."""
    from sqlalchemy.dialects.postgresql.psycopg import dialect

    return str(statement.compile(dialect=dialect()))  # type: ignore[no-untyped-call]
