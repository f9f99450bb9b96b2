"""The engine's hot-path statements run alone under EXPLAIN (ANALYZE, BUFFERS), as the engine
sends them and with an instance-id predicate added, for ``bench/partitioned.py``: what a
statement costs on a layout hashed by instance, and what it would have to carry for the
planner to read one partition instead of all of them.

Writes run inside a transaction that is rolled back, so every repetition finds the same
rows at the same versions.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from bench import cpu_use
from bpm.store.batch_sql import flush_sql
from bpm.store.json_rows import encode_rows

#: The part of a step's write statement measured here: the task row's and the token's guarded
#: updates and their history rows (a step also inserts the next task: an insert is routed by
#: its row's instance id on either layout).
STEP_PARTS = frozenset({"tu", "ku", "token", "task"})
#: An instance id predicate put in front of the id match of both guarded updates.
_TASK_BY_ID = "WHERE t.id = u.id"
_TOKEN_BY_ID = "WHERE k.id = u.id"

TOKEN_BY_ID = "SELECT * FROM tokens WHERE id = %(id)s"
FETCH = (
    "SELECT id FROM external_tasks WHERE state = 'READY' AND kind = 'EXTERNAL' "
    "AND topic = %(topic)s AND (retry_at IS NULL OR retry_at <= now()){extra} "
    "ORDER BY priority DESC, created_at LIMIT 10 FOR UPDATE SKIP LOCKED"
)
BY_BUSINESS_KEY = (
    "SELECT k.id, k.node_id, k.version FROM process_instances p "
    "JOIN tokens k ON k.instance_id = p.id WHERE p.business_key = %(bk)s "
    "AND p.state IN ('RUNNING', 'FAILED') AND k.state = 'WAITING'{extra}"
)


@dataclass(frozen=True)
class Explained:
    """Medians over the repetitions of one statement."""

    ms: float
    planning_ms: float
    buffers: int
    partitions: int


def _walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = [node]
    for child in node.get("Plans", []):
        out.extend(_walk(child))
    return out


def _summary(plan: dict[str, Any]) -> tuple[float, float, int, int]:
    """Execution and planning ms; shared buffers hit and read; relations scanned. A node's buffers
    include its children's, except a data-modifying CTE nothing reads (run after the main
    plan), so a node is counted with what it used beyond its children, never below 0."""
    nodes = _walk(plan["Plan"])
    buffers = 0
    for node in nodes:
        own = node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0)
        below = sum(
            c.get("Shared Hit Blocks", 0) + c.get("Shared Read Blocks", 0)
            for c in node.get("Plans", [])
        )
        buffers += max(own - below, 0)
    scanned = {n["Relation Name"] for n in nodes if "Relation Name" in n}
    return float(plan["Execution Time"]), float(plan["Planning Time"]), buffers, len(scanned)


def explain(conn: psycopg.Connection, sql: str, params: dict[str, Any], n: int) -> Explained:
    """``sql`` run ``n`` times under EXPLAIN (ANALYZE, BUFFERS), each rolled back."""
    runs = []
    for _ in range(n):
        with conn.transaction(force_rollback=True):
            row = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql,
                params,
            ).fetchone()
        assert row is not None
        doc = row[0] if isinstance(row[0], list) else json.loads(row[0])
        runs.append(_summary(doc[0]))
    return Explained(
        ms=statistics.median(r[0] for r in runs),
        planning_ms=statistics.median(r[1] for r in runs),
        buffers=int(statistics.median(r[2] for r in runs)),
        partitions=int(statistics.median(r[3] for r in runs)),
    )


def backend_cpu_us(conn: psycopg.Connection, sql: str, params: dict[str, Any], n: int) -> float:
    """Microseconds of the backend's CPU per run of ``sql``, prepared as the engine's hot
    statements are (psycopg prepares a statement from its fifth run), each rolled back."""
    pid = {conn.info.backend_pid}
    for _ in range(6):  # past the prepare threshold and the plan cache's custom plans
        with conn.transaction(force_rollback=True):
            conn.execute(sql, params, prepare=True)
    before = cpu_use.by_role([], pid)
    for _ in range(n):
        with conn.transaction(force_rollback=True):
            conn.execute(sql, params, prepare=True)
    return cpu_use.spent(before, cpu_use.by_role([], pid))["postgres"] * 1e6 / n


def _step(conn: psycopg.Connection, topic: str) -> tuple[str, dict[str, Any]]:
    """The write statement of a step that completes a READY task of ``topic`` and moves its
    token on, with its parameters: the rows as they are, one version on."""
    with conn.cursor(row_factory=dict_row) as cur:
        task = cur.execute(
            "SELECT to_jsonb(t) AS row, t.id, t.token_id, t.instance_id, t.node_id "
            "FROM external_tasks t WHERE topic = %s AND state = 'READY' LIMIT 1",
            (topic,),
        ).fetchone()
        assert task is not None, f"no READY task of {topic!r}"
        token = cur.execute(
            "SELECT id, version, node_id FROM tokens WHERE id = %s", (task["token_id"],)
        ).fetchone()
        assert token is not None
    now = datetime.now(UTC)
    history = [
        {
            "k": k,
            "tbl": tbl,
            "instance_id": task["instance_id"],
            "at": now,
            "type": kind,
            "node_id": task["node_id"],
            "from_state": "ACTIVE",
            "to_state": "ACTIVE",
            "actor": "bench",
            "data": None,
            "token_id": token["id"],
            "task_id": task["id"] if tbl == "task" else None,
            "cause": "bench",
        }
        for k, (tbl, kind) in enumerate((("task", "COMPLETED"), ("token", "MOVED")))
    ]
    moved = {
        "id": token["id"],
        "expected": token["version"],
        "state": "ACTIVE",
        "node_id": token["node_id"],
        "via_flow": None,
        "wait_kind": None,
        "waits_for": None,
        "version": token["version"] + 1,
        "updated_at": now,
    }
    params = {
        "tu": json.dumps([{**task["row"], "state": "DONE"}]),
        "tui": [task["id"]],
        "ntu": 1,
        "ku": encode_rows([moved]),
        "kui": [token["id"]],
        "nku": 1,
        "h": encode_rows(history),
        "iid": task["instance_id"],
    }
    return flush_sql(STEP_PARTS), params


def hot_paths(conn: psycopg.Connection, topic: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, SQL, parameters) of each statement, as sent and with an instance id added."""
    step, params = _step(conn, topic)
    token = conn.execute(
        "SELECT k.id, k.instance_id, p.business_key FROM tokens k "
        "JOIN process_instances p ON p.id = k.instance_id "
        "WHERE k.state = 'WAITING' AND p.business_key IS NOT NULL LIMIT 1"
    ).fetchone()
    assert token is not None, "no instance waits for a message"
    tid, iid, bk = token
    with_iid = " AND instance_id = %(iid)s"
    task_iid = params["iid"]
    return [
        ("token read by id", TOKEN_BY_ID, {"id": tid}),
        ("  + instance_id", TOKEN_BY_ID + with_iid, {"id": tid, "iid": iid}),
        ("step write (task+token+history)", step, params),
        (
            "  + instance_id",
            step.replace(
                _TASK_BY_ID, "WHERE t.instance_id = %(iid)s::uuid AND t.id = u.id"
            ).replace(_TOKEN_BY_ID, "WHERE k.instance_id = %(iid)s::uuid AND k.id = u.id"),
            params,
        ),
        ("fetch-and-lock by topic", FETCH.format(extra=""), {"topic": topic}),
        ("  + instance_id", FETCH.format(extra=with_iid), {"topic": topic, "iid": task_iid}),
        ("correlation by business key", BY_BUSINESS_KEY.format(extra=""), {"bk": bk}),
        (
            "  + instance_id",
            BY_BUSINESS_KEY.format(extra=" AND k.instance_id = %(iid)s"),
            {"bk": bk, "iid": iid},
        ),
    ]
