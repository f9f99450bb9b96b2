"""Retention: ended instances past their ``historyTimeToLive`` go, with every row of theirs.

What must hold: an instance is deleted only when it is COMPLETED, TERMINATED or CANCELLED and
its TTL has passed since it ended; then nothing of it is left in any table, and nothing of
any other instance changes. RUNNING and FAILED instances, and instances waiting at a user
task, a timer or a message, are never touched, whatever the TTL and the clock say. Batches
are bounded, two cleanups at once delete each instance once, and a cleanup holding its locks
blocks no runtime write.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import ColumnElement, select

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.engine.operations import retention
from bpm.errors import InvalidDefinition
from bpm.handlers import HandlerRegistry
from bpm.store import Connection, Database, definitions
from bpm.store import retention as store
from bpm.store.schema import metadata, process_instances, token_links, tokens
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import snapshot
from tests.helpers.race import run_together
from tests.helpers.runtime import Calls, EngineFactory, Harness, failing

DAY = timedelta(days=1)
CENTURY = timedelta(days=36500)

#: Rows per table, each as its repr (JSON columns make tuples unhashable).
RowSet = dict[str, Counter[str]]


# --- what belongs to an instance --------------------------------------------------------------


def rows_of(db: Database, iids: Iterable[UUID]) -> RowSet:
    """Every row of every table that belongs to the instances ``iids``."""
    ids = list(iids)
    out: RowSet = {}
    with db.transaction() as conn:
        token_ids = select(tokens.c.id).where(tokens.c.instance_id.in_(ids))
        for table in metadata.sorted_tables:
            where: ColumnElement[bool]
            if table is process_instances:
                where = table.c.id.in_(ids)
            elif table is token_links:
                where = table.c.parent_token_id.in_(token_ids) | table.c.child_token_id.in_(
                    token_ids
                )
            elif "instance_id" in table.c:
                where = table.c.instance_id.in_(ids)
            else:
                continue  # process and decision definitions: never deleted
            found = conn.execute(select(table).where(where))
            out[table.name] = Counter(repr(tuple(r)) for r in found)
    return out


def everything(db: Database) -> RowSet:
    return {name: Counter(map(repr, found)) for name, found in snapshot(db).items()}


def minus(whole: RowSet, part: RowSet) -> RowSet:
    return {name: found - part.get(name, Counter[str]()) for name, found in whole.items()}


#: Local variables end with their scope, and signal deliveries with their delivery, so an
#: ended instance holds none (retention deletes them all the same, in case one is left). Saved
#: task queries (filters) belong to no instance. API
#: credentials, deployments and signal subscriptions belong to no instance.
INSTANCE_TABLES = {t.name for t in metadata.sorted_tables} - {
    "process_definitions",
    "decision_definitions",
    "deployments",
    "deployment_resources",
    "definition_message_starts",
    "definition_start_timers",
    "definition_signal_subscriptions",
    "signal_deliveries",
    "local_variables",
    "api_credentials",
    "filters",
}


# --- processes ----------------------------------------------------------------------------------


def simple(key: str = "p", ttl: Any = 1) -> dict[str, Any]:
    return (
        ProcessBuilder(key, history_ttl=ttl)
        .start()
        .service_task("work", handler="work")
        .end()
        .sequence("start", "work", "end")
        .build()
    )


def rich(ttl: Any = 1) -> dict[str, Any]:
    """Rows in every table: a compensable step, a fork whose branches fail once (an incident,
    retried) and wait on a timer, then a join, and a signal end event."""
    b = ProcessBuilder("rich", history_ttl=ttl).start()
    b._node("work", "serviceTask", handler="work", compensation={"handler": "undo"})
    b.parallel_gateway("fork").parallel_gateway("join").signal_throw("end", signal="done", end=True)
    b._node("flaky", "serviceTask", handler="flaky", retry={"max_attempts": 1})
    b.timer("pause", duration="PT1M")
    b.sequence("start", "work", "fork").sequence("join", "end")
    b.sequence("fork", "flaky", "join").sequence("fork", "pause", "join")
    return b.build()


def saga(ttl: Any = 1) -> dict[str, Any]:
    b = ProcessBuilder("saga", saga="global", history_ttl=ttl).start()
    b._node("a", "serviceTask", handler="work", compensation={"handler": "undo"})
    b.service_task("boom", handler="boom")
    return b.end().sequence("start", "a", "boom", "end").build()


def review(key: str = "review", ttl: Any = 1) -> dict[str, Any]:
    return (
        ProcessBuilder(key, history_ttl=ttl)
        .start()
        .user_task("review", assignee="ann")
        .end()
        .sequence("start", "review", "end")
        .build()
    )


def register(calls: Calls) -> None:
    calls.add("work")
    calls.add("undo")
    calls.add("flaky", failing(1, "flaky"))
    calls.add("boom", failing(1000, "boom"))


def run_rich(rt: Harness) -> UUID:
    """A COMPLETED instance of ``rich`` that went through a failure and an operator retry."""
    iid = rt.run(rich(), {"order": 7})
    db = rt.engine.db
    assert rows.state(db, iid) == "FAILED"
    rt.engine.retry(rows.only_task(db, iid, "flaky").id)
    rt.drain()
    rt.clock.advance(minutes=1)
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert rows.state(db, iid) == "COMPLETED"
    return iid


def ended_of_every_kind(rt: Harness) -> list[UUID]:
    """COMPLETED (with rows in every table), TERMINATED (a saga) and CANCELLED instances."""
    db = rt.engine.db
    completed = run_rich(rt)
    terminated = rt.run(saga())
    assert rows.state(db, terminated) == "TERMINATED"
    cancelled = rt.run(review())
    (task,) = rt.engine.user_tasks(instance_id=cancelled)
    rt.engine.add_comment(task["id"], "looked at it", user="ann")  # comments go with it
    rt.engine.cancel(cancelled)
    assert rows.state(db, cancelled) == "CANCELLED"
    return [completed, terminated, cancelled]


def completed_instances(rt: Harness, n: int, key: str = "p", ttl: Any = 1) -> list[UUID]:
    rt.deploy(simple(key, ttl))
    ids = [rt.start(key) for _ in range(n)]
    rt.drain()
    assert {rows.state(rt.engine.db, i) for i in ids} == {"COMPLETED"}
    return ids


def existing(db: Database, iids: Iterable[UUID]) -> set[UUID]:
    with db.transaction() as conn:
        return {
            r.id
            for r in conn.execute(
                select(process_instances.c.id).where(process_instances.c.id.in_(list(iids)))
            )
        }


# --- the definition key -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ttl", "seconds"),
    [
        (1, 86400),
        (0, 0),
        ("30", 30 * 86400),
        ("P30D", 30 * 86400),
        ("PT1H", 3600),
        ("P1DT12H", 129600),
        ("PT0.5S", 1),
        (None, None),
    ],
)
def test_deploy_stores_the_history_ttl(rt: Harness, ttl: Any, seconds: int | None) -> None:
    doc = simple(ttl=ttl)
    def_id = rt.deploy(doc)
    with rt.engine.db.transaction() as conn:
        row = definitions.by_id(conn, def_id)
    assert row is not None and row.history_ttl_seconds == seconds
    ttl = rt.engine.core.graph(def_id).history_ttl
    assert (None if ttl is None else math.ceil(ttl.total_seconds())) == seconds


def test_a_changed_ttl_is_a_new_version(rt: Harness) -> None:
    first = rt.engine.deploy(simple(ttl=1))
    again = rt.engine.deploy(simple(ttl=1))
    changed = rt.engine.deploy(simple(ttl=2))
    assert (first.version, again.created, changed.version) == (1, False, 2)
    with rt.engine.db.transaction() as conn:
        rows_ = [definitions.by_id(conn, d.id) for d in (first, changed)]
    assert [r.history_ttl_seconds for r in rows_ if r is not None] == [86400, 2 * 86400]


@pytest.mark.parametrize(
    ("ttl", "fragment"),
    [
        (-1, "must not be negative"),
        ("-1", "not an ISO 8601 duration"),
        (True, "whole number of days"),
        (None, "whole number of days"),
        (1.5, "whole number of days"),
        ([30], "whole number of days"),
        ({"days": 30}, "whole number of days"),
        ("", "not an ISO 8601 duration"),
        ("soon", "'soon' is not an ISO 8601 duration"),
        ("P1Y", "years or months"),
        ("P", "not an ISO 8601 duration"),
        (10**9, "at most 36500 days (100 years)"),
        (36501, "at most 36500 days"),
        ("P99999D", "is too long (at most 100 years)"),
    ],
)
def test_a_bad_history_ttl_is_refused_naming_the_process(
    rt: Harness, pg_db: Database, ttl: Any, fragment: str
) -> None:
    rt.deploy(simple("orders", ttl=1))
    before = snapshot(pg_db)
    doc = simple("orders")
    doc["historyTimeToLive"] = ttl
    with pytest.raises(InvalidDefinition) as info:
        rt.engine.deploy(doc)
    message = str(info.value)
    assert "process 'orders'" in message and "'historyTimeToLive'" in message, message
    assert fragment in message, message
    assert snapshot(pg_db) == before


def test_the_default_ttl_comes_from_the_environment() -> None:
    assert retention.ttl_from_env({}) is None
    assert retention.ttl_from_env({"BPM_HISTORY_TTL_DAYS": " "}) is None
    assert retention.ttl_from_env({"BPM_HISTORY_TTL_DAYS": "30"}) == 30 * DAY
    assert retention.ttl_from_env({"BPM_HISTORY_TTL_DAYS": "0.5"}) == DAY / 2
    for bad in ("-1", "soon", "nan", "inf", "1e9"):
        with pytest.raises(Exception, match="BPM_HISTORY_TTL_DAYS must be a number of days"):
            retention.ttl_from_env({"BPM_HISTORY_TTL_DAYS": bad})


# --- what is deleted, and what is not -----------------------------------------------------------


def test_ended_instances_past_their_ttl_go_with_every_row_of_theirs(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    register(calls)
    every_row_goes(rt, clock)


def test_on_sqlite_too(tmp_path: Path) -> None:
    """Embedded mode: the same deletes, in foreign key order (SQLite enforces them too)."""
    clock, handlers = FakeClock(), HandlerRegistry()
    register(Calls(handlers))
    embedded = EmbeddedRuntime(
        f"sqlite:///{tmp_path / 'retention.db'}", handlers=handlers, clock=clock
    )
    try:
        every_row_goes(Harness(embedded.engine, embedded.dispatcher, clock), clock)
    finally:
        embedded.close()


def every_row_goes(rt: Harness, clock: FakeClock) -> None:
    db = rt.engine.db
    doomed = ended_of_every_kind(rt)
    # Others that stay: one more of each kind that ended later (within its TTL), and live ones.
    clock.advance(DAY / 2)
    kept = [*ended_of_every_kind(rt), rt.run(review("live", ttl=0))]
    doomed_rows = rows_of(db, doomed)
    empty = sorted(t for t in INSTANCE_TABLES if not doomed_rows[t])
    assert empty == [], f"the test's instances leave no rows in {empty}"
    before = everything(db)

    clock.advance(DAY / 2)  # the first three ended a day ago, the others half a day ago
    assert rt.engine.cleanup_history() == 3

    assert existing(db, doomed) == set()
    assert all(not found for found in rows_of(db, doomed).values())
    assert everything(db) == minus(before, doomed_rows)  # nothing else changed
    assert existing(db, kept) == set(kept)
    assert rt.engine.cleanup_history() == 0  # idempotent


def test_an_instance_is_kept_until_its_ttl_has_passed(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    (iid,) = completed_instances(rt, 1, ttl="PT1H")
    ended_at = rows.instance(rt.engine.db, iid).ended_at
    assert ended_at is not None
    assert rt.engine.cleanup_history(ended_at + timedelta(minutes=59, seconds=59)) == 0
    assert rt.engine.cleanup_history(ended_at + timedelta(hours=1)) == 1  # ended_at + ttl <= now
    assert existing(rt.engine.db, [iid]) == set()


def test_nothing_of_a_live_instance_is_ever_removed(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    calls.add("boom", failing(1, "boom"))
    db = rt.engine.db
    live = {
        "user task": rt.run(review("at_user_task", ttl=0)),
        "timer": rt.run(
            ProcessBuilder("at_timer", history_ttl=0)
            .start()
            .timer("t", duration="P10D")
            .end()
            .sequence("start", "t", "end")
            .build()
        ),
        "message": rt.run(
            ProcessBuilder("at_message", history_ttl=0)
            .start()
            .receive_task("hear", message="go")
            .end()
            .sequence("start", "hear", "end")
            .build()
        ),
        "failed": rt.run(
            ProcessBuilder("failing", history_ttl=0)
            .start()
            .service_task("boom", handler="boom", retry={"max_attempts": 1})
            .end()
            .sequence("start", "boom", "end")
            .build()
        ),
    }
    (done,) = completed_instances(rt, 1, "done", ttl=0)
    rt.deploy(simple("queued", ttl=0))
    live["running, job queued"] = rt.start("queued")  # its first job is not run yet
    assert rows.state(db, live["failed"]) == "FAILED"
    assert {rows.state(db, i) for k, i in live.items() if k != "failed"} == {"RUNNING"}
    before = rows_of(db, live.values())

    clock.advance(CENTURY)
    swept = retention.sweep(rt.engine.core, clock.now(), default_ttl=timedelta(0), batch=1)
    assert swept.deleted == 1 and existing(db, [done]) == set()
    assert rows_of(db, live.values()) == before

    # Everything they need is still there: each one can go on to its end.
    (task,) = rt.engine.user_tasks(instance_id=live["user task"])
    rt.engine.complete_user_task(task["id"])
    rt.engine.correlate("go", instance_id=live["message"])
    rt.engine.retry(rows.only_task(db, live["failed"], "boom").id)
    rt.drain()
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert {k: rows.state(db, i) for k, i in live.items()} == dict.fromkeys(live, "COMPLETED")
    assert rt.engine.cleanup_history(default_ttl=timedelta(0)) == len(live)
    assert sum(map(len, rows_of(db, live.values()).values())) == 0


def test_definitions_without_a_ttl_use_the_default_or_are_kept(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    db = rt.engine.db
    forever = completed_instances(rt, 2, "no_ttl", ttl=None)
    own = completed_instances(rt, 2, "own_ttl", ttl=10)  # its own TTL beats the default
    clock.advance(CENTURY)
    assert rt.engine.cleanup_history() == 2  # no default: only own_ttl's instances go
    assert existing(db, forever + own) == set(forever)
    assert rt.engine.cleanup_history(default_ttl=2 * CENTURY) == 0
    assert rt.engine.cleanup_history(default_ttl=DAY) == 2
    assert existing(db, forever) == set()


def test_own_ttl_is_kept_when_the_default_is_shorter(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    own = completed_instances(rt, 2, "own_ttl", ttl=10)
    clock.advance(days=5)
    assert rt.engine.cleanup_history(default_ttl=DAY) == 0
    assert existing(rt.engine.db, own) == set(own)


def test_batches_are_bounded(
    rt: Harness, calls: Calls, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    calls.add("work")
    ids = completed_instances(rt, 25)
    clock.advance(days=2)
    with caplog.at_level(logging.INFO, logger="bpm.retention"):
        first = retention.sweep(
            rt.engine.core, clock.now(), default_ttl=None, batch=10, max_batches=2
        )
    assert (first.deleted, first.batches, first.more) == (20, 2, True)
    sizes = [r.__dict__["instances"] for r in caplog.records if r.name == "bpm.retention"]
    assert sizes == [10, 10]
    assert first.rows["process_instances"] == 20 and first.rows["tokens"] > 0
    rest = retention.sweep(rt.engine.core, clock.now(), default_ttl=None, batch=10, max_batches=2)
    assert (rest.deleted, rest.more) == (5, False)
    assert existing(rt.engine.db, ids) == set()
    with pytest.raises(ValueError):
        retention.sweep(rt.engine.core, clock.now(), default_ttl=None, batch=0)


def test_dry_run_counts_what_a_cleanup_would_delete(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    completed_instances(rt, 3, "a", ttl=1)
    completed_instances(rt, 2, "b", ttl=None)
    clock.advance(days=2)
    before = snapshot(rt.engine.db)
    assert retention.due(rt.engine.core, clock.now(), default_ttl=None) == 3
    assert retention.due(rt.engine.core, clock.now(), default_ttl=DAY) == 5
    assert snapshot(rt.engine.db) == before


# --- concurrency --------------------------------------------------------------------------------


def test_two_cleanups_at_once_delete_each_instance_once(
    rt: Harness, calls: Calls, clock: FakeClock, engine_factory: EngineFactory
) -> None:
    calls.add("work")
    engines = [engine_factory().engine for _ in range(2)]
    for _ in range(3):
        ids = completed_instances(rt, 40)
        clock.advance(days=2)
        now = clock.now()

        def cleaner(engine: Engine, now: datetime) -> Callable[[], int]:
            return lambda: retention.cleanup(
                engine.core, now, default_ttl=None, batch=3, max_batches=100
            )

        counts = run_together([cleaner(e, now) for e in engines])
        assert sum(counts) == len(ids), counts
        assert existing(rt.engine.db, ids) == set()


def test_a_cleanup_running_beside_live_work_blocks_none_of_it(
    rt: Harness, calls: Calls, clock: FakeClock, engine_factory: EngineFactory
) -> None:
    calls.add("work")
    old = completed_instances(rt, 120)
    clock.advance(days=2)
    now = clock.now()  # what ends from here on is within its TTL
    waiting = rt.run(review(ttl=1))
    worker = engine_factory()

    def live_work() -> list[UUID]:
        started = [worker.start("p") for _ in range(20)]
        worker.drain()
        (task,) = worker.engine.user_tasks(instance_id=waiting)
        worker.engine.complete_user_task(task["id"])
        worker.drain()
        return started

    def cleaner() -> list[UUID]:
        assert retention.cleanup(rt.engine.core, now, default_ttl=None, batch=5) == len(old)
        return []

    started, _ = run_together([live_work, cleaner])
    db = rt.engine.db
    assert {rows.state(db, i) for i in [*started, waiting]} == {"COMPLETED"}
    assert existing(db, old) == set()
    assert existing(db, started) == set(started)


def test_an_open_cleanup_batch_blocks_no_runtime_write(
    rt: Harness, calls: Calls, clock: FakeClock, pg_db: Database, engine_factory: EngineFactory
) -> None:
    """A batch holds its locks (claimed instance rows, deleted rows) until it commits:
    meanwhile instances of the same definition start, move, wait and end, and the same
    definition is deployed again."""
    calls.add("work")
    old = completed_instances(rt, 10, "shared", ttl=1)
    waiting = rt.run(review("shared_review", ttl=1))
    clock.advance(days=2)
    (def_id,) = {rows.instance(pg_db, i).process_def_id for i in old}
    worker = engine_factory()
    finished = threading.Event()
    errors: list[BaseException] = []

    def live_work() -> None:
        try:
            worker.deploy(simple("shared", ttl=1))
            started = [worker.start("shared") for _ in range(5)]
            worker.drain()
            (task,) = worker.engine.user_tasks(instance_id=waiting)
            worker.engine.complete_user_task(task["id"])
            worker.drain()
            assert {rows.state(pg_db, i) for i in [*started, waiting]} == {"COMPLETED"}
            finished.set()
        except BaseException as exc:
            errors.append(exc)

    with pg_db.transaction() as conn:
        claimed = hold_a_batch(conn, def_id, clock)
        assert len(claimed) == 10
        thread = threading.Thread(target=live_work)
        thread.start()
        thread.join(timeout=30)
        assert not errors, errors
        assert finished.is_set(), "runtime work waited for the open cleanup batch"
    assert existing(pg_db, old) == set()


def hold_a_batch(conn: Connection, def_id: UUID, clock: FakeClock) -> list[UUID]:
    ids = store.claim_due(conn, def_id, clock.peek() - DAY, 100)
    store.delete_instances(conn, ids)
    return ids


# --- the job beat sends -------------------------------------------------------------------------


def test_the_celery_task_and_its_schedule(
    rt: Harness, calls: Calls, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bpm.cleanup_history`` on the scans queue, daily by default; run in-process here (no
    broker): a run that reaches its budget sends itself again until nothing is due."""
    from bpm_beat.schedule import beat_schedule
    from bpm_workers import app, tasks
    from bpm_workers.config import ROUTES, SCANS, Settings, settings_from_env

    assert ROUTES["bpm.cleanup_history"] == SCANS
    monkeypatch.delenv("BPM_CLEANUP_INTERVAL", raising=False)
    monkeypatch.setenv("BPM_HISTORY_TTL_DAYS", "3")
    settings = settings_from_env()
    assert (settings.cleanup_interval, settings.history_ttl) == (86400.0, 3 * DAY)
    entry = beat_schedule(settings)["bpm.cleanup_history"]
    assert entry["schedule"] == 86400.0 and entry["options"]["queue"] == "bpm.scans"
    monkeypatch.setenv("BPM_CLEANUP_INTERVAL", "3600")
    assert beat_schedule(settings_from_env())["bpm.cleanup_history"]["schedule"] == 3600.0
    assert Settings("redis://", "", 1, 1.0, 1.0).history_ttl is None

    calls.add("work")
    ids = completed_instances(rt, 5)
    clock.advance(days=2)
    monkeypatch.setattr(tasks, "engine_for", lambda *_: rt.engine)
    monkeypatch.setitem(app.conf, "task_always_eager", True)  # re-sends run here, not on Redis
    monkeypatch.setattr(
        retention, "sweep", functools.partial(retention.sweep, batch=2, max_batches=1)
    )
    assert app.tasks["bpm.cleanup_history"]() == "deleted=2 batches=1 more=True"
    assert existing(rt.engine.db, ids) == set()  # the two re-sent runs did the rest
