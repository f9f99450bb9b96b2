"""New instances and tokens written with the write batch (PostgreSQL).

A fork's tokens, and a start's instance and root token, are not inserted when the engine
creates them but by the batch's statement at the flush, so a step that forks, or a start,
is one statement (in autocommit when it is the transaction's only one). Any statement sent
before the flush writes them first, so every read and lock of the transaction finds them;
the new rows and the rest of the step still commit, or vanish, together; a token moved in the
transaction that made it is inserted as moved; and a start whose key another start took
meanwhile writes nothing and returns that start's instance.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import event, inspect, select

from bpm.definitions import ProcessBuilder
from bpm.engine.core.tx import Conflict, Tx
from bpm.engine.operations import lifecycle
from bpm.engine.semantics import instances as instances_semantics
from bpm.engine.semantics import moves
from bpm.errors import UnknownProcess
from bpm.states import LinkType, TokenEvent, TokenState
from bpm.store import Database, batch, instances, tokens
from bpm.store import db as store_db
from bpm.store.batch import WriteBatch, start_taken
from bpm.store.db import DatabaseUnavailable, first_statement_commits
from bpm.store.ids import new_id
from bpm.store.rows import TokenRow
from bpm.store.schema import token_links
from tests.helpers import db as rows
from tests.helpers.invariants import snapshot
from tests.helpers.runtime import Harness

DOC = (
    ProcessBuilder("new_tokens")
    .start()
    .service_task("hold", topic="t")
    .end()
    .sequence("start", "hold", "end")
    .build()
)


def waiting_token(rt: Harness) -> TokenRow:
    rt.deploy(DOC)
    iid = rt.start("new_tokens", {})
    rt.drain()
    (tok,) = [t for t in rows.tokens_of(rt.engine.db, iid) if t.state == "WAITING"]
    return tok


def spawn(tx: Tx, parent: TokenRow) -> TokenRow:
    """A new child of ``parent`` with its FORK link, as a fork makes it."""
    child = moves.new_token(
        tx,
        instance_id=parent.instance_id,
        node_id="hold",
        parent=parent.id,
        scope_id=None,
        concurrent=True,
        via_flow=None,
    )
    moves.create(tx, [child], [(parent.id, child.id, LinkType.FORK)])
    return child


class Sent:
    """The statements a database's connections send, through SQLAlchemy or the driver."""

    def __init__(self, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sql: list[str] = []
        event.listen(db.engine, "before_cursor_execute", self._through_sqlalchemy)
        raw = store_db._raw

        def counted(conn: Any, sql: str, params: Any, many: bool) -> Any:
            self.sql.append(sql)
            return raw(conn, sql, params, many)

        monkeypatch.setattr(store_db, "_raw", counted)

    def _through_sqlalchemy(self, _c: Any, _cur: Any, sql: str, *_: Any) -> None:
        self.sql.append(sql)


@pytest.fixture
def sent(rt: Harness, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sent]:
    watcher = Sent(rt.engine.db, monkeypatch)
    yield watcher
    event.remove(rt.engine.db.engine, "before_cursor_execute", watcher._through_sqlalchemy)


def links_of(db: Database, child: UUID) -> list[tuple[UUID, str]]:
    with db.engine.connect() as conn:
        found = conn.execute(
            select(token_links.c.parent_token_id, token_links.c.link_type).where(
                token_links.c.child_token_id == child
            )
        )
        return [(p, str(k)) for p, k in found]


def test_a_step_that_forks_sends_one_statement(rt: Harness, sent: Sent) -> None:
    parent = waiting_token(rt)
    sent.sql.clear()
    with rt.engine.core.transaction() as tx:
        moves.move(tx, parent, state=TokenState.WAITING, event=TokenEvent.FORKED)
        child = spawn(tx, parent)
    assert len(sent.sql) == 1 and sent.sql[0].startswith("WITH "), sent.sql
    assert rows.token(rt.engine.db, child.id).parent_token_id == parent.id
    assert links_of(rt.engine.db, child.id) == [(parent.id, "FORK")]
    created = rows.token_events_of(rt.engine.db, parent.instance_id, token_id=child.id)
    assert [e["type"] for e in created] == [TokenEvent.CREATED]


def test_a_statement_before_the_flush_finds_the_new_tokens(rt: Harness) -> None:
    parent = waiting_token(rt)
    db = rt.engine.db
    before = snapshot(db)
    with pytest.raises(RuntimeError, match="undo"), rt.engine.core.transaction() as tx:
        first = spawn(tx, parent)
        assert tokens.get(tx.conn, first.id) == first  # through the driver
        second = spawn(tx, parent)
        stmt = select(tokens.COLUMNS[0]).where(tokens.COLUMNS[0] == second.id)
        assert tx.conn.execute(stmt).scalar() == second.id  # through SQLAlchemy
        assert [c.id for c in tx.live_children(parent.id)] == [first.id, second.id]
        raise RuntimeError("undo")
    assert snapshot(db) == before  # written in the transaction: rolled back with it


def test_a_batch_that_misses_leaves_no_new_token(rt: Harness) -> None:
    parent = waiting_token(rt)
    db = rt.engine.db
    before = snapshot(db)
    with pytest.raises(Conflict, match=str(parent.id)), rt.engine.core.transaction() as tx:
        stale = replace(parent, version=parent.version - 1)
        moves.move(tx, stale, state=TokenState.WAITING, event=TokenEvent.FORKED)
        spawn(tx, parent)
    assert snapshot(db) == before


def test_a_token_moved_where_it_was_made_is_inserted_as_moved(rt: Harness) -> None:
    parent = waiting_token(rt)
    db = rt.engine.db
    with rt.engine.core.transaction() as tx:
        child = spawn(tx, parent)
        moved = moves.move(tx, child, state=TokenState.WAITING, event=TokenEvent.WAITING)
        assert tx.batch.new.tokens == [child] and child.id in tx.batch.token_moves
    stored = rows.token(db, child.id)
    assert stored == moved and (stored.state, stored.version) == ("WAITING", 1)
    events = rows.token_events_of(db, parent.instance_id, token_id=child.id)
    assert [e["type"] for e in events] == [TokenEvent.CREATED, TokenEvent.WAITING]


def test_a_deferred_write_keeps_the_next_statement_in_the_transaction(rt: Harness) -> None:
    """Sent first, the new tokens must commit with the statement that sent them, not alone."""
    parent = waiting_token(rt)
    with rt.engine.core.transaction() as tx:
        spawn(tx, parent)
        with first_statement_commits(tx.conn) as alone:
            assert alone is False


def test_new_tokens_are_written_with_every_column_of_the_table(pg_db: Database) -> None:
    """The batch inserts ``SELECT *`` of JSON rows shaped like the table: a column the rows do
    not carry is NULL, so only ``nudged_at`` (NULL until a scan re-sends a job) may be."""
    with pg_db.engine.connect() as conn:
        upgrade_columns = [c["name"] for c in inspect(conn).get_columns("tokens")]
    assert upgrade_columns == [*TokenRow.__dataclass_fields__, "nudged_at"]


def instances_keyed(db: Database, key: str) -> list[UUID]:
    with db.engine.connect() as conn:
        found = conn.exec_driver_sql(
            "SELECT id FROM process_instances WHERE idempotency_key = %(k)s", {"k": key}
        )
        return [row[0] for row in found]


def test_a_start_is_a_read_and_one_statement(rt: Harness, sent: Sent) -> None:
    rt.deploy(DOC)
    rt.engine.start("new_tokens", {})  # the definition's graph is read once, then kept
    sent.sql.clear()
    started = rt.engine.start("new_tokens", {"a": 1})
    assert len(sent.sql) == 2 and sent.sql[1].startswith("WITH "), [s[:90] for s in sent.sql]
    (root,) = rows.tokens_of(rt.engine.db, started.id)
    assert (root.node_id, root.state) == ("start", "ACTIVE")
    assert rows.engine_events_of(rt.engine.db, started.id, type="InstanceStarted")


@pytest.mark.parametrize(
    ("read", "each", "run_now"),
    [
        (False, False, False),
        (True, False, False),
        (False, True, False),
        (False, True, True),
        (False, False, True),
    ],
    ids=[
        "at-the-flush",
        "before-a-read",
        "statement-by-statement",
        "statement-by-statement-going-on",
        "at-the-flush-going-on",
    ],
)
def test_a_start_whose_key_was_taken_meanwhile_writes_nothing_and_returns_the_first(
    rt: Harness, monkeypatch: pytest.MonkeyPatch, read: bool, each: bool, run_now: bool
) -> None:
    """The second start read no instance for its key (the first had not committed yet),
    then found the key taken when its row was written: with the batch, before a read the
    start sent after creating the instance (as a node with work to look up does), or first
    of the statements of a batch too large for one; also when the start goes on at once
    (``run_now``, a worker's start), its root token moved to its first task."""
    if each:
        monkeypatch.setattr(batch, "HISTORY_BLOCK", 0)
    rt.deploy(DOC)
    first = rt.engine.start("new_tokens", {"a": 1}, business_key="order-1")
    db = rt.engine.db
    before = snapshot(db)
    lookup = instances.by_idempotency_key
    calls: list[str] = []

    def missed_once(conn: Any, key: str, ikey: str) -> Any:
        calls.append(ikey)
        return None if len(calls) == 1 else lookup(conn, key, ikey)

    monkeypatch.setattr(instances, "by_idempotency_key", missed_once)
    create = instances_semantics.create

    def create_then_read(tx: Tx, *args: Any, **kwargs: Any) -> Any:
        made = create(tx, *args, **kwargs)
        if read and made is not None:
            tx.token(made[1].id)
        return made

    monkeypatch.setattr(instances_semantics, "create", create_then_read)
    refused: list[bool] = []

    def noted(exc: BaseException) -> bool:
        refused.append(start_taken(exc))
        return refused[-1]

    monkeypatch.setattr(lifecycle, "start_taken", noted)
    again = rt.engine.start("new_tokens", {"a": 1}, business_key="order-1", run_now=run_now)
    assert (again.id, again.created) == (first.id, False)
    assert snapshot(db) == before
    assert instances_keyed(db, "order-1") == [first.id]
    assert refused == ([True] if read else [])  # which statement found the key taken
    assert calls == ["order-1", "order-1"]  # missed at first, found once refused


def test_a_start_whose_definition_was_deleted_meanwhile_is_refused(
    rt: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The definition was deleted after the start read it: the instance's row, written with
    the batch, finds none (foreign key), and the start says so."""
    rt.deploy(DOC)
    db = rt.engine.db
    create = instances_semantics.create

    def create_then_delete(tx: Tx, *args: Any, **kwargs: Any) -> Any:
        made = create(tx, *args, **kwargs)
        with db.engine.begin() as other:
            other.exec_driver_sql("DELETE FROM process_definitions WHERE key = 'new_tokens'")
        return made

    monkeypatch.setattr(instances_semantics, "create", create_then_delete)
    with pytest.raises(UnknownProcess, match="deleted"):
        rt.engine.start("new_tokens", {})
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM process_instances").scalar() == 0


def test_new_instances_are_written_with_every_column_of_the_table(pg_db: Database) -> None:
    with pg_db.engine.connect() as conn:
        columns = [c["name"] for c in inspect(conn).get_columns("process_instances")]
    assert columns == [str(c.name) for c in instances.COLUMNS]


def test_a_start_that_ends_in_its_first_transaction_inserts_its_instance_ended(
    rt: Harness,
) -> None:
    """A worker's start goes on at once (``run_now``): reaching the end event in the same
    transaction ends an instance whose row the same statement inserts."""
    rt.deploy(ProcessBuilder("at_once").start().end().sequence("start", "end").build())
    started = rt.engine.start("at_once", {"a": 1}, run_now=True)
    db = rt.engine.db
    with db.engine.connect() as conn:
        state, version, ended = conn.exec_driver_sql(
            "SELECT state, version, ended_at FROM process_instances WHERE id = %(id)s",
            {"id": started.id},
        ).one()
    assert (state, version) == ("COMPLETED", 1) and ended is not None
    (row,) = rows.engine_events_of(db, started.id, type="InstanceCompleted")
    assert (row["from_state"], row["to_state"]) == ("RUNNING", "COMPLETED")


def test_a_connection_lost_mid_transaction_is_an_outage(pg_db: Database) -> None:
    """The deferred write's bookkeeping must not hide the outage behind SQLAlchemy's own
    complaint about the invalidated connection."""
    with pytest.raises(DatabaseUnavailable), pg_db.transaction() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with pg_db.engine.connect() as other:
            other.exec_driver_sql("SELECT pg_terminate_backend(%(p)s)", {"p": pid})
            other.commit()
        conn.exec_driver_sql("SELECT 1")


def test_a_deferred_write_no_statement_took_is_sent_before_the_commit(rt: Harness) -> None:
    """New rows deferred in a transaction that sends nothing after them are still written:
    deferring never drops them."""
    parent = waiting_token(rt)
    child = replace(parent, id=new_id(), parent_token_id=parent.id, concurrent=True, version=0)
    with rt.engine.db.transaction() as conn:
        WriteBatch().insert_tokens(conn, [child], [(parent.id, child.id, LinkType.FORK)])
    assert rows.token(rt.engine.db, child.id) == child
    assert links_of(rt.engine.db, child.id) == [(parent.id, "FORK")]
