"""The scaling experiment's partitioned layout (``bench/partition_layout.py``): converted from
a migrated database, it still runs the engine's unchanged queries, so the bench's figures
for it are the engine working, not failing."""

from __future__ import annotations

import psycopg

from bench.engine_throughput import noop, plain_dsn, sequential
from bench.partition_layout import BY_TIME, HASHED, convert
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.handlers import HandlerRegistry
from bpm.store import Database


def test_a_sequential_instance_completes_on_the_partitioned_layout(pg_url: str) -> None:
    with psycopg.connect(plain_dsn(pg_url), autocommit=True) as conn:
        done = convert(conn, partitions=4)
    # What partitioning forced: the id keys carry the partition key, and nothing can
    # reference a token's id alone any more.
    assert "tokens: PRIMARY KEY (id) -> (id, instance_id)" in done.widened
    assert "token_events: PRIMARY KEY (id) -> (id, at)" in done.widened
    assert any(fk.endswith("REFERENCES tokens(id)") for fk in done.dropped_foreign)
    assert done.dropped_unique == []

    db = Database(pg_url)
    try:
        registry = HandlerRegistry()
        registry.register("noop", noop)
        dispatcher = InProcessDispatcher()
        engine = Engine(db, dispatcher, handlers=registry)
        engine.deploy(sequential(3))
        started = engine.start("bench_sequential", {"n": 1}, business_key="order-1")
        while (job := dispatcher.pop(engine.clock.now())) is not None:
            engine.run_job(job)
    finally:
        db.dispose()

    with psycopg.connect(plain_dsn(pg_url)) as conn:
        kinds: dict[str, str] = dict(
            conn.execute(
                "SELECT relname, relkind FROM pg_class WHERE relname = ANY(%s)",
                ([*HASHED, *BY_TIME],),
            ).fetchall()
        )
        state = conn.execute(
            "SELECT state FROM process_instances WHERE id = %s", (started.id,)
        ).fetchone()
        tokens = conn.execute(
            "SELECT DISTINCT tableoid::regclass::text FROM tokens WHERE instance_id = %s",
            (started.id,),
        ).fetchall()
        history = conn.execute(
            "SELECT DISTINCT tableoid::regclass::text FROM token_events WHERE instance_id = %s",
            (started.id,),
        ).fetchall()
    assert set(kinds.values()) == {"p"} and len(kinds) == len(HASHED) + len(BY_TIME)
    assert state == ("COMPLETED",)
    # One instance's tokens live in one hash partition; its history in a day's partition
    # (today's, or tomorrow's if the day turned during the test), not the default one.
    assert len(tokens) == 1 and tokens[0][0].startswith("tokens_p")
    assert len(history) == 1 and history[0][0] != "token_events_default"
