"""An external worker whose database goes away while a handler runs keeps the result."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.sdk import ExternalTask, Worker
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.tcp_proxy import TcpProxy
from tests.sdk.test_worker import start, started, wait_until


@pytest.fixture
def proxy(pg_url: str) -> Iterator[TcpProxy]:
    with TcpProxy.to_database(pg_url) as p:
        yield p


def test_a_result_finished_while_the_database_is_down_is_reported_once_it_is_back(
    pg_url: str, pg_db: Database, proxy: TcpProxy
) -> None:
    direct = Engine(pg_db, InProcessDispatcher(), worker_id="setup")
    direct.deploy(
        ProcessBuilder("outage")
        .start()
        .service_task("t", topic="outage")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    iid = started(direct, "outage")
    behind = Database(proxy.url_for(pg_url), pool_size=2)
    running: list[tuple[Worker, threading.Thread]] = []
    try:
        worker = Worker(
            "sdk-outage",
            engine=Engine(behind, InProcessDispatcher()),
            long_poll=0.5,
            shutdown_grace=1,
        )
        ran: list[int] = []

        # The lock (60 s) outlasts the test: a dropped result would run again only then.
        @worker.subscribe("outage", lock_duration=timedelta(seconds=60))
        def work(task: ExternalTask) -> dict[str, bool]:
            ran.append(task.attempt)
            proxy.cut()  # the database goes away while the handler runs
            time.sleep(1)
            return {"done": True}

        start(worker, running)
        wait_until(lambda: bool(ran))
        time.sleep(2)  # the report has failed at least once by now
        assert rows.state(pg_db, iid) == "RUNNING"
        proxy.restore()
        wait_until(lambda: rows.state(pg_db, iid) == "COMPLETED", timeout=30)
        assert ran == [1]
        assert direct.show(iid)["variables"] == {"done": True}
    finally:
        for w, _ in running:
            w.stop()
        for _, t in running:
            t.join(timeout=60)
        behind.dispose()
