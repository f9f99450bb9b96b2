"""Every runtime change has its history row, in the same transaction.

A varied workload (exclusive choice, fork and join, subprocess, retries, a failure fixed by an
operator, a cancellation, a terminate end event) runs with history tables that refuse UPDATE
and DELETE; then, for every instance:

(a) every token's state is the ``to_state`` of its last token event, and it has a CREATED one;
(b) every task's state is the ``to_state`` of its last task event;
(c) every instance state change has its engine event;
(d) every row's version equals its number of events minus one (version starts at 0 with the
    creation event; each guarded update adds one version and one event).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import text

from bpm.definitions import ProcessBuilder
from bpm.handlers import HandlerContext
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import history_problems
from tests.helpers.runtime import ONLY_ADVANCE, Calls, EngineFactory, Harness, failing

APPEND_ONLY = """
CREATE FUNCTION bpm_test_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'history table % is append-only (%)', TG_TABLE_NAME, TG_OP; END $$;
""" + "".join(
    f"CREATE TRIGGER append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON {t} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION bpm_test_append_only();\n"
    for t in ("token_events", "task_events", "engine_events")
)


def rich_process() -> dict[str, Any]:
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .service_task("flaky", handler="flaky", retry={"max_attempts": 3, "backoff": "PT1S"})
        .end("s_end")
        .sequence("s_start", "flaky", "s_end")
    )
    return (
        ProcessBuilder("rich")
        .start()
        .exclusive_gateway("gw", default="f_small")
        .task("quick")
        .end("end_small")
        .parallel_gateway("fork")
        .parallel_gateway("join")
        .sub_process("sub", body)
        .service_task("enrich", handler="enrich")
        .manual_task("by_hand")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "gw")
        .flow("gw", "fork", condition="amount > 100", flow_id="f_big")
        .flow("gw", "quick", flow_id="f_small")
        .sequence("quick", "end_small")
        .sequence("fork", "sub", "join")
        .sequence("fork", "enrich", "join")
        .sequence("fork", "by_hand", "join")
        .sequence("join", "after", "end")
        .build()
    )


def run_workload(engine_factory: EngineFactory, calls: Calls) -> dict[str, UUID]:
    """Instances in every end state the engine has so far; returns them by scenario."""
    broken = {"yes": True}

    def fragile(ctx: HandlerContext) -> None:
        if broken["yes"]:
            raise RuntimeError("downstream unavailable")

    calls.add("flaky", failing(1))
    calls.add("enrich", lambda ctx: {"enriched": ctx.variables["amount"] * 2})
    calls.add("after")
    calls.add("fragile", fragile)
    calls.add("idle")
    rt = engine_factory()
    out = {"big": rt.engine.start("rich", {"amount": 500}).id}
    out["small"] = rt.engine.start("rich", {"amount": 5}).id
    out["missing_variable"] = rt.engine.start("rich", {}).id
    rt.drain()

    out["operator_retry"] = rt.run(
        ProcessBuilder("fragile")
        .start()
        .service_task("t", handler="fragile", retry={"max_attempts": 2})
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    (tok,) = rows.tokens_of(rt.engine.db, out["operator_retry"])
    broken["yes"] = False
    rt.engine.retry(tok.id)
    rt.drain()

    queued = engine_factory(run_handlers_inline=False)
    queued.deploy(
        ProcessBuilder("cancel_me")
        .start()
        .parallel_gateway("fork")
        .service_task("x", handler="idle")
        .service_task("y", handler="fragile")
        .end("ex")
        .end("ey")
        .sequence("start", "fork", "x", "ex")
        .sequence("fork", "y", "ey")
        .build()
    )
    out["cancelled"] = queued.start("cancel_me")
    queued.drain(ONLY_ADVANCE)
    queued.engine.cancel(out["cancelled"])
    queued.drain()

    out["terminated"] = rt.run(
        ProcessBuilder("terminate")
        .start()
        .parallel_gateway("fork")
        .end("stop", terminate=True)
        .service_task("never", handler="idle")
        .end()
        .sequence("start", "fork", "stop")
        .sequence("fork", "never", "end")
        .build()
    )
    return out


@pytest.fixture
def append_only(pg_db: Database) -> None:
    with pg_db.transaction() as conn:
        conn.execute(text(APPEND_ONLY))


def test_history_tables_refuse_updates(pg_db: Database, append_only: None) -> None:
    with pytest.raises(Exception, match="append-only"), pg_db.transaction() as conn:
        conn.execute(text("DELETE FROM engine_events"))


def test_every_runtime_change_has_its_history_row(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database, append_only: None
) -> None:
    engine_factory().deploy(rich_process())
    out = run_workload(engine_factory, calls)

    states = {name: rows.state(pg_db, iid) for name, iid in out.items()}
    assert states == {
        "big": "COMPLETED",
        "small": "COMPLETED",
        "missing_variable": "FAILED",
        "operator_retry": "COMPLETED",
        "cancelled": "CANCELLED",
        "terminated": "COMPLETED",
    }
    problems = {name: history_problems(pg_db, iid) for name, iid in out.items()}
    assert problems == {name: [] for name in out}

    # The counting invariant (d), spelled out once for one busy instance.
    big = out["big"]
    events_per_token: dict[UUID, int] = {}
    for event in rows.token_events_of(pg_db, big):
        events_per_token[event["token_id"]] = events_per_token.get(event["token_id"], 0) + 1
    toks = rows.tokens_of(pg_db, big)
    assert len(toks) >= 5
    assert {t.id: t.version + 1 for t in toks} == events_per_token


def test_trace_is_the_whole_history_in_order(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database
) -> None:
    rt: Harness = engine_factory()
    rt.deploy(rich_process())
    calls.add("flaky", failing(1))
    calls.add("enrich", lambda ctx: {"enriched": ctx.variables["amount"] * 2})
    calls.add("after")
    iid = rt.engine.start("rich", {"amount": 500}).id
    rt.drain()

    trace = rt.engine.trace(iid)
    total = sum(
        len(f(pg_db, iid))
        for f in (rows.token_events_of, rows.task_events_of, rows.engine_events_of)
    )
    assert len(trace) == total
    assert [e["id"] for e in trace] == sorted(e["id"] for e in trace)
    assert {e["kind"] for e in trace} == {"token", "task", "engine"}
    failed = [e for e in trace if e["type"] == "FAILED" and e["kind"] == "task"]
    assert len(failed) == 1 and failed[0]["node_id"] == "flaky"

    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED" and shown["key"] == "rich"
    assert shown["variables"] == {"amount": 500, "enriched": 1000}
    assert len(shown["tokens"]) == len(rows.tokens_of(pg_db, iid))
    assert {t["node_id"] for t in shown["tasks"]} == {"flaky", "enrich", "after"}


def test_trace_follows_the_order_events_were_written(rt: Harness, calls: Calls) -> None:
    """Within one transaction too: a trace must read as cause before effect."""
    calls.add("work")
    iid = rt.run(
        ProcessBuilder("order")
        .start()
        .service_task("work", handler="work")
        .end()
        .sequence("start", "work", "end")
        .build()
    )
    trace = [(e["kind"], e["type"], e["node_id"]) for e in rt.engine.trace(iid)]

    def at(kind: str, type_: str, node: str | None) -> int:
        return trace.index((kind, type_, node))

    # Each pair is cause then effect, written in that order by one transaction.
    assert at("token", "WAITING", "work") < at("task", "CREATED", "work"), trace
    assert at("task", "COMPLETED", "work") < at("token", "MOVED", "end"), trace
    assert at("token", "COMPLETED", "end") < at("engine", "InstanceCompleted", None), trace
    assert trace[-1] == ("engine", "InstanceCompleted", None), trace
