"""The write batch: one statement per step that undoes itself when a guarded write misses.

On PostgreSQL a transaction whose only statement is the batch runs it in autocommit (no BEGIN
or COMMIT round trip), so the statement itself must refuse to leave anything behind when a
version check fails. These tests drive the batch directly, both as a transaction's first
statement and after a read, and check that a miss writes nothing at all.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.engine.core.tx import Conflict, Stale, Tx
from bpm.engine.semantics import task_moves
from bpm.store import Database, tokens
from bpm.store.rows import TokenRow
from tests.helpers import db as rows
from tests.helpers.invariants import snapshot
from tests.helpers.runtime import Harness

DOC = (
    ProcessBuilder("batch")
    .start()
    .service_task("hold", topic="t")
    .end()
    .sequence("start", "hold", "end")
    .build()
)


def waiting_token(rt: Harness) -> tuple[UUID, TokenRow]:
    rt.deploy(DOC)
    iid = rt.start("batch", {"a": 1})
    rt.drain()
    (tok,) = [t for t in rows.tokens_of(rt.engine.db, iid) if t.state == "WAITING"]
    return iid, tok


def stage_move(tx: Tx, tok: TokenRow, *, expected: int) -> None:
    """A token move guarded by ``expected`` plus writes that must vanish with it."""
    stale = replace(tok, version=expected)
    tx.stage_token(stale, replace(tok, state="ACTIVE", version=expected + 1, updated_at=tx.now))
    tx.write_variables(tok.instance_id, {"a": 2, "b": "new"})
    tx.history.engine(instance_id=tok.instance_id, at=tx.now, type="Probe", actor=tx.actor)


@pytest.mark.parametrize("read_first", [False, True], ids=["autocommit", "in-transaction"])
def test_a_missed_version_check_writes_nothing(rt: Harness, read_first: bool) -> None:
    iid, tok = waiting_token(rt)
    db: Database = rt.engine.db
    before = snapshot(db)
    with pytest.raises(Conflict, match=str(tok.id)):
        with rt.engine.core.transaction() as tx:
            if read_first:
                assert tokens.get(tx.conn, tok.id) is not None
            stage_move(tx, tok, expected=tok.version - 1)
    assert snapshot(db) == before
    assert rows.engine_events_of(db, iid, type="Probe") == []


@pytest.mark.parametrize("read_first", [False, True], ids=["autocommit", "in-transaction"])
def test_a_guarded_batch_that_holds_commits_and_reads_back(rt: Harness, read_first: bool) -> None:
    iid, tok = waiting_token(rt)
    db: Database = rt.engine.db
    with rt.engine.core.transaction() as tx:
        if read_first:
            assert tokens.get(tx.conn, tok.id) is not None
        stage_move(tx, tok, expected=tok.version)
        seen = tx.variables_at_commit(iid)
        assert seen == {}  # filled when the transaction flushes
    assert seen == {"a": 2, "b": "new"}
    assert rows.token(db, tok.id).state == "ACTIVE"
    assert len(rows.engine_events_of(db, iid, type="Probe")) == 1


def test_a_stale_task_change_is_reported_as_stale(rt: Harness) -> None:
    iid, tok = waiting_token(rt)
    db: Database = rt.engine.db
    (task,) = rows.tasks_of(db, iid)
    before = snapshot(db)
    with pytest.raises(Stale, match="gone"):
        with rt.engine.core.transaction() as tx:
            tx.finish_task(
                replace(task, version=task.version + 7),
                state="DONE",
                miss="stale",
                message=f"task {task.id} is gone",
            )
            stage_move(tx, tok, expected=tok.version)
    assert snapshot(db) == before


def test_the_write_statement_stays_in_psycopgs_parsed_query_cache() -> None:
    """psycopg re-parses every execution of a query longer than this (about 0.1 ms of CPU
    per step): keep the batch statement under it."""
    from psycopg import _queries

    from bpm.store.batch_sql import LONGEST

    for statement in LONGEST:
        assert len(statement) <= getattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", 4096)


def test_a_new_task_row_is_encoded_by_orjson_not_the_slow_way() -> None:
    """A new task's row is keyed by the table's column names: orjson refuses a key that is a
    ``str`` subclass (SQLAlchemy's names are), and the fallback encoder costs a step about a
    twentieth of its CPU."""
    import orjson

    from bpm.store.batch_sql import TASK_COLUMNS

    assert all(type(name) is str for name in TASK_COLUMNS)
    orjson.dumps([dict.fromkeys(TASK_COLUMNS)])


@pytest.mark.parametrize("still_reserved", [True, False], ids=["reserved", "offered-again"])
def test_a_reserved_run_begun_by_the_write_statement(rt: Harness, still_reserved: bool) -> None:
    """The write statement begins a reserved task's run (attempt counted, its history row)
    only if the task is still as reserved; when it is not, the rest of the batch commits
    all the same and neither the task nor its history gains anything."""
    iid, _ = waiting_token(rt)
    db: Database = rt.engine.db
    (task,) = rows.tasks_of(db, iid)
    with db.transaction() as conn:  # reserved by "me", as a forking run leaves it
        conn.exec_driver_sql(
            "UPDATE external_tasks SET state = 'LOCKED', lock_owner = 'me', "
            "version = version + 1 WHERE id = %(id)s",
            {"id": task.id},
        )
    reserved = rows.task(db, task.id)
    if not still_reserved:  # the lock scan offered it again meanwhile
        with db.transaction() as conn:
            conn.exec_driver_sql(
                "UPDATE external_tasks SET state = 'READY', lock_owner = NULL, "
                "version = version + 1 WHERE id = %(id)s",
                {"id": task.id},
            )
    with rt.engine.core.transaction() as tx:
        begins = task_moves.begin_reserved(tx, reserved, timedelta(minutes=5))
        tx.history.engine(instance_id=iid, at=tx.now, type="Probe", actor=tx.actor)
        assert tx.batch.begin is not None  # carried by the write, no statement of its own
    begun = begins()
    after = rows.task(db, task.id)
    extended = rows.task_events_of(db, iid, type="LOCK_EXTENDED")
    assert len(rows.engine_events_of(db, iid, type="Probe")) == 1
    if still_reserved:
        assert begun is not None and begun.version == after.version == reserved.version + 1
        assert (after.attempts, after.retries) == (reserved.attempts + 1, reserved.retries - 1)
        assert after.lock_expire_at == begun.lock_expire_at
        assert [e["data"] for e in extended] == [{"attempt": reserved.attempts + 1}]
    else:
        assert begun is None
        assert (after.state, after.attempts) == ("READY", reserved.attempts)
        assert extended == []


def test_a_reserved_run_begun_by_the_transaction_that_cancels_it_does_not_begin(
    rt: Harness,
) -> None:
    """A transaction that changes the task itself (a cancel) and would also begin its run:
    the change wins, the run does not begin and nothing fails."""
    iid, _ = waiting_token(rt)
    db: Database = rt.engine.db
    (task,) = rows.tasks_of(db, iid)
    with db.transaction() as conn:
        conn.exec_driver_sql(
            "UPDATE external_tasks SET state = 'LOCKED', lock_owner = 'me', "
            "version = version + 1 WHERE id = %(id)s",
            {"id": task.id},
        )
    reserved = rows.task(db, task.id)
    with rt.engine.core.transaction() as tx:
        begins = task_moves.begin_reserved(tx, reserved, timedelta(minutes=5))
        tx.finish_task(reserved, state="CANCELLED", miss="stale", message="gone")
    assert begins() is None
    after = rows.task(db, task.id)
    assert (after.state, after.attempts, after.version) == (
        "CANCELLED",
        reserved.attempts,
        reserved.version + 1,
    )
    assert rows.task_events_of(db, iid, type="LOCK_EXTENDED") == []
