"""Fixtures for the integration, embedded and migration suites.

PostgreSQL: the schema is migrated once per session into a template database
(``<BPM_TEST_DATABASE_URL's name>_tmpl_<pid>``); every test gets its own clone of it, dropped
afterwards, so tests never see each other's rows.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from uuid import uuid4

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import URL, make_url

from bpm.beans import BeanRegistry
from bpm.handlers import HandlerRegistry
from bpm.store import Database
from bpm.store.migrate import upgrade
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import Calls, EngineFactory, Harness

CLONE_PREFIX = "bpm_t_"
DEFAULT_TEST_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_test"


def _test_url() -> URL:
    """``BPM_TEST_DATABASE_URL``; read when a PostgreSQL fixture is first used."""
    return make_url(os.environ.get("BPM_TEST_DATABASE_URL", DEFAULT_TEST_URL))


def _admin() -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection to the ``postgres`` database of the test server."""
    admin = _test_url().set(drivername="postgresql", database="postgres")
    try:
        return psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True)
    except psycopg.OperationalError as exc:
        pytest.exit(
            f"cannot reach the test PostgreSQL ({admin.render_as_string()}): {exc}", returncode=3
        )


def _url(database: str) -> URL:
    return _test_url().set(database=database)


def create_database(name: str, template: str | None = None) -> str:
    """Create ``name`` (optionally from a template); returns its SQLAlchemy URL."""
    query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        query = sql.SQL("{} TEMPLATE {}").format(query, sql.Identifier(template))
    with _admin() as conn:
        conn.execute(query)
    return _url(name).render_as_string(hide_password=False)


def drop_database(name: str) -> None:
    with _admin() as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: First key of the advisory lock each test session holds for as long as it runs (the second
#: key is its process id): a database named for a process is an orphan only when no session
#: holds that lock, which stays true when the other session runs in another PID namespace
#: (a container, CI beside a developer) where ``kill(pid, 0)`` cannot see it.
SESSION_LOCK = 0x62706D  # "bpm"


def _owned_by_a_live_session(conn: psycopg.Connection[tuple[object, ...]], pid: int) -> bool:
    if pid == os.getpid() or _alive(pid):
        return True
    row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (SESSION_LOCK, pid)).fetchone()
    if row is None or not row[0]:
        return True
    conn.execute("SELECT pg_advisory_unlock(%s, %s)", (SESSION_LOCK, pid))
    return False


def _drop_orphans(*prefixes: str) -> None:
    """Databases left by test sessions that died before their teardown (``<prefix><pid>_…``);
    a database of a session still running, here or elsewhere, is never touched."""
    with _admin() as conn:
        names = [str(r[0]) for r in conn.execute("SELECT datname FROM pg_database")]
        orphans = []
        for name in names:
            for prefix in prefixes:
                pid = name.removeprefix(prefix).split("_", 1)[0]
                if name.startswith(prefix) and pid.isdigit():
                    if not _owned_by_a_live_session(conn, int(pid)):
                        orphans.append(name)
    for name in orphans:
        drop_database(name)


@pytest.fixture(scope="session")
def _session_lock() -> Iterator[None]:
    """Held while this session runs: it marks the databases named for this process as in use."""
    with _admin() as conn:
        conn.execute("SELECT pg_advisory_lock(%s, %s)", (SESSION_LOCK, os.getpid()))
        yield


class _Dropper:
    """Drops the databases of finished tests in the background (a drop takes a checkpoint,
    several times longer than the clone), so the next test need not wait for it."""

    def __init__(self) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="drop-test-databases", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (name := self._queue.get()) is not None:
            try:
                drop_database(name)
            except BaseException as exc:
                self.errors.append(exc)

    def drop(self, name: str) -> None:
        self._queue.put(name)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=120)
        if self.errors:
            raise self.errors[0]


@pytest.fixture(scope="session")
def _dropper() -> Iterator[_Dropper]:
    dropper = _Dropper()
    yield dropper
    dropper.close()


@pytest.fixture(scope="session")
def pg_template(_dropper: _Dropper, _session_lock: None) -> Iterator[str]:
    """A database migrated to head, used only as the template of every test's database.

    Named ``<test database>_tmpl_<pid>``: sessions running at the same time (a developer's
    and CI's, or the CLI suite's) each build and drop their own.
    """
    prefix = f"{_test_url().database}_tmpl_"
    _drop_orphans(prefix, CLONE_PREFIX)
    name = f"{prefix}{os.getpid()}"
    drop_database(name)
    db = Database(create_database(name))
    try:
        upgrade(db)
    finally:
        db.dispose()
    yield name
    _dropper.drop(name)


@pytest.fixture
def pg_url(pg_template: str, _dropper: _Dropper) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for this test only (dropped afterwards)."""
    name = f"{CLONE_PREFIX}{os.getpid()}_{uuid4().hex[:8]}"
    url = create_database(name, template=pg_template)
    try:
        yield url
    finally:
        _dropper.drop(name)


@pytest.fixture
def empty_pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database with no schema at all."""
    name = f"bpm_e_{uuid4().hex[:8]}"
    url = create_database(name)
    try:
        yield url
    finally:
        drop_database(name)


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[Database]:
    db = Database(pg_url)
    try:
        yield db
    finally:
        db.dispose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def handlers() -> HandlerRegistry:
    """A fresh registry per test: the module-level one is never touched."""
    return HandlerRegistry()


@pytest.fixture
def beans() -> BeanRegistry:
    """A fresh bean registry per test: the module-level one is never touched."""
    return BeanRegistry()


@pytest.fixture
def calls(handlers: HandlerRegistry) -> Calls:
    return Calls(handlers)


@pytest.fixture
def engine_factory(
    pg_db: Database, handlers: HandlerRegistry, clock: FakeClock, beans: BeanRegistry
) -> EngineFactory:
    """Make engines (each with its own in-process dispatcher) on this test's database."""
    return EngineFactory(pg_db, handlers, clock, beans)


@pytest.fixture
def rt(engine_factory: EngineFactory) -> Harness:
    """The test's main engine."""
    return engine_factory()


CONFORMANCE_PROPERTY = "bpmn-conformance"  # as recorded by tests/integration/test_bpmn_conformance


def _failure(report: pytest.TestReport) -> str:
    """The first line of what failed a conformance scenario."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "")).strip()
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return "FAILED: " + " / ".join(lines[:2])[:300] if lines else "FAILED"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The BPMN conformance outcome of each scenario run, after the progress dots and from
    whichever process ran it (the scenarios record (id, outcome) on their test reports)."""
    outcomes: dict[str, str] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, pytest.TestReport):
                continue
            for key, value in report.user_properties:
                if key == CONFORMANCE_PROPERTY:
                    assert isinstance(value, tuple | list), value
                    scenario, verdict = value
                    outcomes[str(scenario)] = str(verdict)
            if report.failed and "test_bpmn_conformance" in report.nodeid:
                outcomes[report.nodeid.split("[", 1)[-1].removesuffix("]")] = _failure(report)
    if outcomes:
        terminalreporter.section("BPMN conformance summary")
        for scenario, outcome in sorted(outcomes.items()):
            terminalreporter.write_line(f"  {scenario}: {outcome}")
