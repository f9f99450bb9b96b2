"""A scope's lock and the read of its live children (``tokens.lock_with_children``), the
statements a scope deciding about its branches sends straight to the driver.

The read must begin only once the lock is held, or a branch that parked at the join while
the scope waited for the lock would be missed and the join never fire. And a raw statement
that is a transaction's first opens a real transaction: a rollback undoes it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any
from uuid import UUID

import psycopg
import pytest

from bpm.definitions import ProcessBuilder
from bpm.store import Database, new_tokens, tokens
from bpm.store.rows import TokenRow
from tests.helpers import db as rows
from tests.helpers.runtime import Harness

FORK = (
    ProcessBuilder("scope_locks")
    .start()
    .parallel_gateway("fork")
    .service_task("a", topic="ta")
    .service_task("b", topic="tb")
    .parallel_gateway("join")
    .end()
    .sequence("start", "fork")
    .sequence("fork", "a", "join")
    .sequence("fork", "b", "join")
    .sequence("join", "end")
    .build()
)
WAIT_S = 20.0


def forked(rt: Harness) -> tuple[UUID, TokenRow, list[TokenRow]]:
    """An instance whose two branches wait at their tasks, and its scope's token."""
    rt.deploy(FORK)
    iid = rt.start("scope_locks", {})
    rt.drain()
    live = rows.tokens_of(rt.engine.db, iid)
    (scope,) = [t for t in live if t.parent_token_id is None]
    branches = [t for t in live if t.parent_token_id == scope.id]
    assert len(branches) == 2, live
    return iid, scope, branches


def blocked_on_a_lock(db: Database) -> bool:
    """Whether a backend of the test database is waiting for a row lock now."""
    with db.engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        row = raw.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def test_the_children_read_with_a_lock_include_a_branch_that_parked_during_the_wait(
    rt: Harness,
) -> None:
    """A holds the scope's lock and parks a branch at the join; B asks for the lock and the
    children in one round trip, waits, and must see the branch as A committed it."""
    iid, scope, (first, _second) = forked(rt)
    db: Database = rt.engine.db
    seen: dict[str, Any] = {}

    def scope_decides() -> None:
        with db.transaction() as conn:
            seen["result"] = tokens.lock_with_children(conn, scope.id, iid)

    with db.transaction() as holder:
        assert tokens.lock(holder, scope.id, iid) is not None
        holder.exec_driver_sql(
            "UPDATE tokens SET node_id = 'join', state = 'WAITING', wait_kind = 'JOIN', "
            "version = version + 1 WHERE id = %(id)s",
            {"id": first.id},
        )
        decider = threading.Thread(target=scope_decides)
        decider.start()
        deadline = time.monotonic() + WAIT_S
        while not blocked_on_a_lock(db):
            assert time.monotonic() < deadline, "the decider never waited for the lock"
            time.sleep(0.01)
    decider.join(WAIT_S)
    assert not decider.is_alive()
    locked, children = seen["result"]
    assert locked is not None and locked.id == scope.id
    parked = {c.id: c for c in children}[first.id]
    assert (parked.node_id, parked.wait_kind, parked.version) == ("join", "JOIN", first.version + 1)


def test_lock_with_children_of_a_token_that_is_gone_reads_none(rt: Harness) -> None:
    iid, scope, _ = forked(rt)
    with rt.engine.db.transaction() as conn:
        assert tokens.lock_with_children(conn, scope.id, iid)[0] is not None
        assert tokens.lock_with_children(conn, iid, iid) == (None, [])


def test_a_raw_statement_that_opens_a_transaction_is_undone_by_its_rollback(
    rt: Harness,
) -> None:
    """The BEGIN sent with the statement is a real one: the insert vanishes with the error."""
    iid, scope, _ = forked(rt)
    db: Database = rt.engine.db
    clone = replace(scope, id=UUID(int=scope.id.int ^ 1), parent_token_id=scope.id)
    with pytest.raises(RuntimeError, match="after the insert"):
        with db.transaction() as conn:
            new_tokens.insert(conn, [clone])  # the transaction's first statement
            raw = conn.connection.driver_connection
            assert raw is not None
            assert raw.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            raise RuntimeError("after the insert")
    assert clone.id not in {t.id for t in rows.tokens_of(db, iid)}


def test_the_one_round_trip_reads_what_the_lock_and_the_read_apart_read(rt: Harness) -> None:
    """On PostgreSQL the lock and the read are one call of ``bpm_lock_with_children``: the
    token and its children come back as ``lock`` and ``live_children`` read them, oldest
    first, with every column a token row has (the function spells its columns out)."""
    iid, scope, branches = forked(rt)
    with rt.engine.db.transaction() as conn:
        together = tokens.lock_with_children(conn, scope.id, iid)
        apart = (tokens.lock(conn, scope.id, iid), tokens.live_children(conn, scope.id))
    assert together == apart
    assert [c.id for c in together[1]] == [b.id for b in branches]
