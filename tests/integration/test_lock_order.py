"""Lock order: a transaction that locks an instance's row locks it before any other row of
the instance (its tokens, tasks, timers, incidents), so an operator's cancel racing a
transaction that resolves the instance's last incident cannot deadlock with it.

Each race pauses the second transaction at the point where it used to hold a token row and
still want the incident the cancel holds, lets the cancel run as far as it can (to its end,
or until it waits for a row lock), then lets the paused one go on. Both must finish: one may
lose the race and be retried, or be refused, but nothing deadlocks and history replays.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import Connection, text

from bpm.definitions import ProcessBuilder
from bpm.engine.core.tx import Tx
from bpm.engine.operations import repairs, replay
from bpm.engine.semantics.instance_state import resume_if_clear
from bpm.engine.semantics.tree import Tree
from bpm.errors import InvalidOperation
from bpm.store import Database, RetryableDatabaseError
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, EngineFactory, Harness, failing

#: One branch fails for good (an incident, the instance FAILED); the other waits at a user
#: task whose completion ends the instance's scope at a terminate end event, cancelling the
#: failed token and resolving its incident.
FAILED_AND_TERMINATE = (
    ProcessBuilder("cancel_race")
    .start()
    .parallel_gateway("fork")
    .service_task("bad", handler="bad")
    .end("e_bad")
    .user_task("review")
    .end("stop", terminate=True)
    .sequence("start", "fork", "bad", "e_bad")
    .sequence("fork", "review", "stop")
    .build()
)
#: Two branches at user tasks: when the second is completed, the scope's decision (its last
#: child ended) completes the instance.
TWO_USER_TASKS = (
    ProcessBuilder("decide_race")
    .start()
    .parallel_gateway("fork")
    .user_task("u1")
    .end("e1")
    .user_task("u2")
    .end("e2")
    .sequence("start", "fork", "u1", "e1")
    .sequence("fork", "u2", "e2")
    .build()
)
RACER = "racer"
WAIT = 20.0


@dataclass
class Pause:
    """Holds the racer thread's first call of a hooked function until the cancel has gone
    as far as it can."""

    reached: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)

    def hold(self) -> None:
        if threading.current_thread().name == RACER and not self.reached.is_set():
            self.reached.set()
            assert self.go.wait(WAIT), "the race was never released"


@dataclass
class Outcome:
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


def _thread(name: str, fn: Callable[[], Any], out: Outcome) -> threading.Thread:
    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # reported by the test
            out.error = exc
        finally:
            out.done.set()

    return threading.Thread(target=run, name=name, daemon=True)


def _waits_for_a_row_lock(db: Database) -> bool:
    with db.transaction() as conn:
        return bool(_lock_waiters(conn))


def _lock_waiters(conn: Connection) -> int:
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    return int(conn.execute(query).scalar_one())


@pytest.fixture
def deadlocks(pg_db: Database, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every deadlock PostgreSQL broke up in this test (the engine retries them silently)."""
    found: list[str] = []
    original = pg_db.transaction

    @contextmanager
    def recording() -> Iterator[Connection]:
        try:
            with original() as conn:
                yield conn
        except RetryableDatabaseError as exc:
            if "deadlock" in str(exc):
                found.append(str(exc))
            raise

    monkeypatch.setattr(pg_db, "transaction", recording)
    return found


def _failed_instance(rt: Harness, calls: Calls, pg_db: Database) -> Any:
    calls.add("bad", failing(99))
    iid = rt.run(FAILED_AND_TERMINATE)
    assert rows.state(pg_db, iid) == "FAILED"
    assert [i.state for i in rows.incidents_of(pg_db, iid)] == ["OPEN"]
    return iid


def _race(
    rt: Harness, pause: Pause, racer: Callable[[], Any], cancel: Callable[[], Any], db: Database
) -> tuple[Outcome, Outcome]:
    """Start the racer, wait until it is paused, run the cancel as far as it goes (its end,
    or a wait for a row lock), then release the racer; both must end."""
    raced, cancelled = Outcome(), Outcome()
    first = _thread(RACER, racer, raced)
    first.start()
    assert pause.reached.wait(WAIT), "the racer never reached its pause"
    second = _thread("cancel", cancel, cancelled)
    second.start()
    deadline = time.monotonic() + WAIT
    while not cancelled.done.is_set() and not _waits_for_a_row_lock(db):
        assert time.monotonic() < deadline, "the cancel neither ended nor waited for a lock"
        time.sleep(0.02)
    pause.go.set()
    first.join(WAIT)
    second.join(WAIT)
    assert raced.done.is_set() and cancelled.done.is_set(), "a racer is still stuck"
    return raced, cancelled


def test_a_cancel_racing_a_terminate_that_resolves_the_last_incident_does_not_deadlock(
    engine_factory: EngineFactory,
    calls: Calls,
    pg_db: Database,
    deadlocks: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The user task's completion reaches the terminate end event, reads the execution tree
    (where it used to write its token row), and is held there while the cancel runs; then
    it cancels the failed token, resolves its incident and resumes the instance."""
    rt = engine_factory()
    iid = _failed_instance(rt, calls, pg_db)
    [task] = rt.engine.user_tasks(instance_id=iid)
    pause = Pause()
    read = Tree.read

    def paused_read(cls: type[Tree], tx: Any, instance_id: Any) -> Tree:
        tree = read(tx, instance_id)
        pause.hold()
        return tree

    monkeypatch.setattr(Tree, "read", classmethod(paused_read))
    other = engine_factory()
    raced, cancelled = _race(
        rt,
        pause,
        lambda: rt.engine.complete_user_task(task["id"]),
        lambda: other.engine.cancel(iid),
        pg_db,
    )
    _check(rt, other, iid, raced, cancelled, deadlocks, pg_db)


def test_a_cancel_racing_an_operator_retry_does_not_deadlock(
    engine_factory: EngineFactory,
    calls: Calls,
    pg_db: Database,
    deadlocks: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The retry has resolved the token's incident and is held before it resumes the
    instance while the cancel runs."""
    rt = engine_factory()
    iid = _failed_instance(rt, calls, pg_db)
    [failed] = [t for t in rows.tokens_of(pg_db, iid) if t.state == "FAILED"]
    pause = Pause()

    def paused_resume(tx: Any, instance_id: Any) -> None:
        pause.hold()
        resume_if_clear(tx, instance_id)

    monkeypatch.setattr(repairs, "resume_if_clear", paused_resume)
    other = engine_factory()
    raced, cancelled = _race(
        rt, pause, lambda: rt.engine.retry(failed.id), lambda: other.engine.cancel(iid), pg_db
    )
    _check(rt, other, iid, raced, cancelled, deadlocks, pg_db)


def test_a_cancel_racing_the_decision_that_completes_the_instance_does_not_deadlock(
    engine_factory: EngineFactory,
    pg_db: Database,
    deadlocks: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The root scope's decision locks its token (it used to lock only that, and the
    instance's row at flush, when it completes the instance) and is held there while the
    cancel runs. The cancel then finds the instance completed, or cancels it first."""
    rt = engine_factory()
    iid = rt.run(TWO_USER_TASKS)
    rt.engine.complete_user_task(rt.engine.user_tasks(instance_id=iid)[0]["id"])
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    pause = Pause()
    lock_token = Tx.lock_token_with_children

    def paused_lock_token(tx: Tx, token_id: Any, instance_id: Any) -> Any:
        locked = lock_token(tx, token_id, instance_id)
        pause.hold()
        return locked

    monkeypatch.setattr(Tx, "lock_token_with_children", paused_lock_token)
    other = engine_factory()

    def complete_the_last() -> None:
        rt.engine.complete_user_task(task["id"])
        rt.drain()

    raced, cancelled = _race(rt, pause, complete_the_last, lambda: other.engine.cancel(iid), pg_db)
    assert deadlocks == [], deadlocks
    assert raced.error is None, repr(raced.error)
    # The cancel went first, or found the instance completed and was refused.
    assert cancelled.error is None or isinstance(cancelled.error, InvalidOperation)
    rt.drain()
    other.drain()
    assert_finished_cleanly(pg_db, iid, "CANCELLED" if cancelled.error is None else "COMPLETED")
    assert replay.check(rt.engine.core, iid) == []


def _check(
    rt: Harness,
    other: Harness,
    iid: Any,
    raced: Outcome,
    cancelled: Outcome,
    deadlocks: list[str],
    db: Database,
) -> None:
    assert deadlocks == [], deadlocks
    assert cancelled.error is None, repr(cancelled.error)
    # The racer either went first or found the instance cancelled and was refused.
    assert raced.error is None or isinstance(raced.error, InvalidOperation), repr(raced.error)
    rt.drain()
    other.drain()
    assert_finished_cleanly(db, iid, "CANCELLED")
    assert {i.state for i in rows.incidents_of(db, iid)} == {"RESOLVED"}
    assert replay.check(rt.engine.core, iid) == []
