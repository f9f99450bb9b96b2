"""The store's side of a database outage, against a real PostgreSQL behind a TCP proxy."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from sqlalchemy import text

from bpm.definitions import ProcessBuilder
from bpm.engine.operations.external import TopicRequest
from bpm.errors import TaskNotLocked
from bpm.store import Database, DatabaseUnavailable
from bpm.store.db import IDLE_BEFORE_PING
from bpm.store.outages import until_available
from tests.helpers import db as rows
from tests.helpers.runtime import Harness
from tests.helpers.tcp_proxy import TcpProxy


@pytest.fixture
def proxy(pg_url: str) -> Iterator[TcpProxy]:
    with TcpProxy.to_database(pg_url) as p:
        yield p


def _one(db: Database) -> int:
    with db.transaction() as conn:
        return int(conn.execute(text("SELECT 1")).scalar_one())


def test_pooled_connections_are_checked_after_the_server_dropped_them(
    pg_url: str, proxy: TcpProxy
) -> None:
    db = Database(proxy.url_for(pg_url), pool_size=2)
    try:
        assert _one(db) == 1  # one connection now sits in the pool
        proxy.cut()  # what a server restart does to it; a restart takes a while
        time.sleep(IDLE_BEFORE_PING + 0.2)
        proxy.restore()
        assert _one(db) == 1  # the first transaction after the restart works
    finally:
        db.dispose()


def test_an_unreachable_database_is_one_error_naming_it_without_the_password(
    pg_url: str, proxy: TcpProxy
) -> None:
    url = proxy.url_for(pg_url).replace("postgres@", "postgres:s3cret@")
    db = Database(url, pool_size=1)
    try:
        proxy.cut()
        with pytest.raises(DatabaseUnavailable, match="is unavailable") as caught:
            _one(db)
        assert "s3cret" not in str(caught.value)
        assert f":{proxy.port}/" in str(caught.value)
    finally:
        db.dispose()


def test_a_statement_error_is_not_an_outage(pg_db: Database) -> None:
    with pytest.raises(Exception) as caught, pg_db.transaction() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    assert not isinstance(caught.value, DatabaseUnavailable)


def test_until_available_waits_for_the_database_and_gives_up_in_time() -> None:
    slept: list[float] = []
    tries: Iterator[Exception | str] = iter(
        [DatabaseUnavailable("down"), DatabaseUnavailable("down"), "up"]
    )

    def call() -> str:
        result = next(tries)
        if isinstance(result, Exception):
            raise result
        return result

    assert until_available(call, within=60, what="test", sleep=slept.append) == "up"
    assert len(slept) == 2 and all(0 < s <= 5 for s in slept)

    def down() -> str:
        raise DatabaseUnavailable("still down")

    with pytest.raises(DatabaseUnavailable, match="still down"):
        until_available(down, within=0.05, what="test")


def test_a_report_sent_again_after_it_landed_never_closes_the_next_attempt(
    rt: Harness, pg_db: Database
) -> None:
    """A worker whose first ``fail`` committed but whose reply was lost sends it again; by then
    the same worker may hold the task's next attempt. The report names its attempt."""
    rt.deploy(
        ProcessBuilder("again")
        .start()
        .service_task("t", topic="again")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    iid = rt.start("again")
    rt.drain()
    lock = [TopicRequest("again", timedelta(minutes=5))]
    [first] = rt.engine.fetch_and_lock("w", lock)
    rt.engine.fail(first.id, "w", "boom", retries=2, attempt=first.attempt)
    [second] = rt.engine.fetch_and_lock("w", lock)
    assert (first.attempt, second.attempt) == (1, 2)
    resends: list[Callable[[], None]] = [
        lambda: rt.engine.fail(first.id, "w", "boom", retries=2, attempt=first.attempt),
        lambda: rt.engine.complete(first.id, "w", {"late": True}, attempt=first.attempt),
        lambda: rt.engine.bpmn_error(first.id, "w", "E", attempt=first.attempt),
    ]
    for resend in resends:
        with pytest.raises(TaskNotLocked, match="attempt 2, not 1"):
            resend()
    rt.engine.complete(second.id, "w", {"done": True}, attempt=second.attempt)
    rt.drain()
    assert rows.state(pg_db, iid) == "COMPLETED"
    assert rt.engine.show(iid)["variables"] == {"done": True}


def test_a_wrong_database_name_is_not_an_outage(pg_url: str) -> None:
    """Waiting would never help: the job must fail at once, naming the problem."""
    from sqlalchemy.engine import make_url

    wrong = make_url(pg_url).set(database="no_such_database_here")
    db = Database(wrong.render_as_string(hide_password=False), pool_size=1)
    try:
        with pytest.raises(Exception, match="does not exist") as caught:
            _one(db)
        assert not isinstance(caught.value, DatabaseUnavailable)
    finally:
        db.dispose()
