"""What the chaos test checks once every instance has ended: nothing lost, nothing done twice.

Each check returns the problems it found as lines of text (empty: all good), so one failed
run reports everything that went wrong at once instead of the first assertion only.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from bpm.store import Database
from tests.chaos import handlers
from tests.chaos.faults import Window
from tests.chaos.handlers import COMPENSATION, FAILS, FORWARD
from tests.chaos.process import BEFORE, KEY, TIMER, UNDOABLE, Order

ENDED = frozenset({"COMPLETED", "TERMINATED", "CANCELLED", "FAILED"})


@dataclass(frozen=True)
class Effect:
    """One row of the ledger: one call of a handler."""

    seq: int
    instance_id: str
    business_key: str
    node: str
    kind: str
    key: str  # idempotency key: the task id
    attempt: int
    outcome: str
    pid: int
    pgid: int
    at: float


def read_ledger(url: str) -> list[Effect]:
    with handlers.connect(url) as conn:
        rows = conn.execute(
            "SELECT seq, instance_id, business_key, node, kind, idempotency_key, attempt,"
            " outcome, pid, pgid, at FROM side_effects ORDER BY seq"
        ).fetchall()
    return [Effect(*row) for row in rows]


@dataclass(frozen=True)
class Instance:
    id: UUID
    business_key: str
    state: str


def instances_of(db: Database) -> list[Instance]:
    with db.transaction() as conn:
        rows = conn.exec_driver_sql(
            "SELECT id, business_key, state FROM process_instances WHERE process_key = %(k)s",
            {"k": KEY},
        ).all()
    return [Instance(r[0], str(r[1]), str(r[2])) for r in rows]


@dataclass
class Findings:
    """Problems by check, and what the run saw that is not a problem (for the report)."""

    problems: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, check: str, lines: Iterable[str]) -> None:
        found = list(lines)
        self.problems.setdefault(check, []).extend(found)

    @property
    def failed(self) -> list[str]:
        return [name for name, lines in self.problems.items() if lines]

    def render(self, limit: int = 25) -> str:
        out = []
        for name, lines in self.problems.items():
            mark = "FAILED" if lines else "ok"
            out.append(f"[{mark}] {name}" + (f": {len(lines)} problem(s)" if lines else ""))
            out += [f"    {line}" for line in lines[:limit]]
            if len(lines) > limit:
                out.append(f"    ... and {len(lines) - limit} more")
        return "\n".join(out)


# --- one instance per business key, in its expected end state ---------------------------


def check_instances(
    orders: Sequence[Order],
    found: Sequence[Instance],
    effects: Sequence[Effect],
    trail: Callable[[str], str],
) -> tuple[list[str], list[str]]:
    """(lost starts, doubled or unknown instances); ``trail`` tells what became of a
    business key's start messages."""
    done: dict[str, int] = defaultdict(int)
    for e in effects:
        if e.kind == FORWARD and e.outcome != FAILS:
            done[e.business_key] += 1
    by_key: dict[str, list[Instance]] = defaultdict(list)
    for inst in found:
        by_key[inst.business_key].append(inst)
    expected = {o.business_key for o in orders}
    lost, doubled = [], []
    for order in orders:
        there = by_key.get(order.business_key, [])
        if not there:
            lost.append(f"{order.business_key}: no instance; {trail(order.business_key)}")
        elif len(there) > 1:
            doubled.append(
                f"{order.business_key}: {len(there)} instances "
                f"({', '.join(f'{str(i.id)[:8]} {i.state}' for i in there)}), "
                f"{done[order.business_key]} forward side effects; "
                f"{trail(order.business_key)}"
            )
    doubled += [
        f"{bk}: {len(v)} instance(s) nobody started"
        for bk, v in by_key.items()
        if bk not in expected
    ]
    return lost, doubled


def check_end_states(orders: Sequence[Order], found: Sequence[Instance]) -> list[str]:
    by_key: dict[str, list[Instance]] = defaultdict(list)
    for inst in found:
        by_key[inst.business_key].append(inst)
    out = []
    for order in orders:
        for inst in by_key.get(order.business_key, []):
            if inst.state != order.end_state:
                out.append(
                    f"{order.business_key} ({'doomed' if order.doomed else 'happy'}): "
                    f"{inst.state}, expected {order.end_state} (instance {inst.id})"
                )
    return out


# --- side effects ------------------------------------------------------------------------


def explained(
    first: Effect, second: Effect, windows: Sequence[Window], killed: dict[int, float]
) -> str | None:
    """Why ``second`` may repeat ``first``: the fault that lies between them, or the kill of
    the process that ran ``first``; None when nothing does."""
    if first.pgid in killed and killed[first.pgid] >= first.at:
        return f"pgid {first.pgid} was killed"
    for w in windows:
        if w.overlaps(first.at, second.at):
            return w.kind
    return None


def _by_instance(
    orders: Sequence[Order], found: Sequence[Instance], effects: Sequence[Effect]
) -> tuple[list[tuple[Order, str, list[Effect]]], list[str]]:
    """Each instance with its order and its side effects (an order started twice is checked
    once per instance: the doubling is its own finding), and effects of no instance."""
    order_of = {o.business_key: o for o in orders}
    mine: dict[str, list[Effect]] = defaultdict(list)
    for e in effects:
        mine[e.instance_id].append(e)
    out = []
    for inst in found:
        order = order_of.get(inst.business_key)
        if order is not None:
            out.append((order, f"{inst.business_key} ({str(inst.id)[:8]})", mine[str(inst.id)]))
    ids = {str(i.id) for i in found}
    stray = [
        f"{e.business_key}: side effects of instance {iid}, which does not exist"
        for iid, rows in mine.items()
        if iid not in ids
        for e in rows[:1]
    ]
    return out, stray


def check_side_effects(
    orders: Sequence[Order],
    found: Sequence[Instance],
    effects: Sequence[Effect],
    max_attempts: int,
    windows: Sequence[Window],
    killed: dict[int, float],
) -> tuple[list[str], list[str]]:
    """Once per attempt, never past the step's attempts, each repeat explained by a fault;
    the right steps and no others. Returns (problems, notes on the explained repeats)."""
    instances, problems = _by_instance(orders, found, effects)
    repeats: dict[str, int] = defaultdict(int)
    for order, name, mine in instances:
        calls: dict[tuple[str, str, str], list[Effect]] = defaultdict(list)
        for e in mine:
            calls[(e.kind, e.node, e.key)].append(e)
        for (kind, node, key), rows in calls.items():
            rows.sort(key=lambda e: (e.attempt, e.at))
            where = f"{name} {kind} {node} (task {key[:8]})"
            for e in rows:
                if e.attempt > max_attempts:
                    problems.append(f"{where}: attempt {e.attempt} > max_attempts {max_attempts}")
            for first, second in itertools.pairwise(rows):
                if second.attempt == first.attempt:
                    problems.append(
                        f"{where}: attempt {first.attempt} ran twice (pids "
                        f"{first.pid}, {second.pid})"
                    )
                    continue
                if first.outcome == FAILS:
                    continue  # failed on purpose: the retry is the point
                why = explained(first, second, windows, killed)
                if why is None:
                    problems.append(
                        f"{where}: attempt {first.attempt} succeeded (pid {first.pid} at "
                        f"{first.at:.2f}), yet attempt {second.attempt} ran again (pid "
                        f"{second.pid} at {second.at:.2f}) with no fault in between"
                    )
                else:
                    repeats[why] += 1
        problems += _steps(order, name, calls)
    notes = [f"repeated side effects explained by {why}: {n}" for why, n in sorted(repeats.items())]
    return problems, notes


def _steps(order: Order, name: str, calls: dict[tuple[str, str, str], list[Effect]]) -> list[str]:
    """The steps this instance must have done (and undone), each visit one task."""
    out = []
    tasks: dict[tuple[str, str], set[str]] = defaultdict(set)
    succeeded: set[str] = set()
    for (kind, node, key), rows in calls.items():
        tasks[(kind, node)].add(key)
        if kind == FORWARD and any(r.outcome != FAILS for r in rows):
            succeeded.add(node)
    for (kind, node), keys in tasks.items():
        if len(keys) > 1:
            out.append(f"{name} {kind} {node}: {len(keys)} different tasks (run more than once)")
    missing = [node for node in order.succeeding if node not in succeeded]
    if missing:
        out.append(f"{name}: forward steps that never succeeded: {missing}")
    extra = succeeded - set(order.succeeding)
    if extra:
        out.append(f"{name}: steps that should not have run succeeded: {sorted(extra)}")
    if (FORWARD, order.skipped) in tasks:
        out.append(f"{name}: ran {order.skipped}, which its route skips")
    undone = {node for (kind, node) in tasks if kind == COMPENSATION}
    if undone != set(order.undone):
        out.append(f"{name}: compensated {sorted(undone)}, expected {sorted(order.undone)}")
    return out


# --- compensations -----------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    node: str
    seq: int
    status: str


def records_of(db: Database) -> dict[str, list[Record]]:
    """The compensation records of every instance (by instance id), in ``seq`` order."""
    with db.transaction() as conn:
        rows = conn.exec_driver_sql(
            "SELECT r.instance_id, r.node_id, r.seq, r.status FROM compensation_records r "
            "JOIN process_instances i ON i.id = r.instance_id WHERE i.process_key = %(k)s "
            "ORDER BY r.seq",
            {"k": KEY},
        ).all()
    out: dict[str, list[Record]] = defaultdict(list)
    for iid, node, seq, status in rows:
        out[str(iid)].append(Record(str(node), int(seq), str(status)))
    return out


def check_compensations(
    orders: Sequence[Order],
    found: Sequence[Instance],
    effects: Sequence[Effect],
    records: dict[str, list[Record]],
) -> list[str]:
    """Doomed orders: each step undone (exactly the steps done), after it was done, latest
    success first: the reverse of the engine's records and of the order the flows impose."""
    out: list[str] = []
    instances, _ = _by_instance(orders, found, effects)
    ids = {f"{i.business_key} ({str(i.id)[:8]})": str(i.id) for i in found}
    for order, name, mine in instances:
        undos = [e for e in mine if e.kind == COMPENSATION]
        if not order.doomed:
            if undos:
                out.append(
                    f"{name}: a happy order was compensated ({sorted({e.node for e in undos})})"
                )
            continue
        first_undo: dict[str, float] = {}
        for e in sorted(undos, key=lambda e: e.at):
            first_undo.setdefault(e.node, e.at)
        done_at: dict[str, float] = {}
        for e in mine:
            if e.kind == FORWARD and e.outcome != FAILS:
                done_at[e.node] = max(done_at.get(e.node, 0.0), e.at)
        for node, at in first_undo.items():
            if node in done_at and at < done_at[node]:
                out.append(f"{name}: {node} undone before it was done")
        undo_order = sorted(first_undo, key=lambda n: first_undo[n])
        recs = [r for r in records.get(ids[name], []) if r.node in UNDOABLE]
        by_seq = [r.node for r in sorted(recs, key=lambda r: -r.seq)]
        if undo_order != by_seq:
            out.append(
                f"{name}: undone in the order {undo_order}, records say {by_seq} "
                f"(latest success first)"
            )
        for a, b in BEFORE:
            if a in first_undo and b in first_undo and first_undo[a] < first_undo[b]:
                out.append(f"{name}: {a} undone before {b}, which came after it")
        bad = [f"{r.node}={r.status}" for r in recs if r.status != "COMPLETED"]
        if bad:
            out.append(f"{name}: compensation records not COMPLETED: {bad}")
        if len(recs) != len({r.node for r in recs}):
            out.append(f"{name}: a step has two records: {[r.node for r in recs]}")
    return out


# --- what the engine left behind ---------------------------------------------------------


def open_incidents(db: Database) -> list[str]:
    with db.transaction() as conn:
        rows = conn.exec_driver_sql(
            "SELECT i.business_key, n.node_id, n.kind, n.message FROM incidents n "
            "JOIN process_instances i ON i.id = n.instance_id WHERE n.state = 'OPEN' "
            "ORDER BY i.business_key"
        ).all()
    return [f"{bk} at {node} ({kind}): {message[:300]}" for bk, node, kind, message in rows]


def leftovers(db: Database) -> list[str]:
    """Live tokens and open tasks in ended instances; and the timer: exactly one per
    instance, fired once."""
    out: list[str] = []
    with db.transaction() as conn:
        live = conn.exec_driver_sql(
            "SELECT i.business_key, i.state, t.node_id, t.state FROM tokens t "
            "JOIN process_instances i ON i.id = t.instance_id "
            "WHERE t.state IN ('ACTIVE', 'WAITING') AND i.state <> 'RUNNING'"
        ).all()
        out += [f"{bk} ({st}): token at {node} still {ts}" for bk, st, node, ts in live]
        open_tasks = conn.exec_driver_sql(
            "SELECT i.business_key, i.state, x.node_id, x.state FROM external_tasks x "
            "JOIN process_instances i ON i.id = x.instance_id "
            "WHERE x.state IN ('READY', 'LOCKED') AND i.state <> 'RUNNING'"
        ).all()
        out += [f"{bk} ({st}): task at {node} still {ts}" for bk, st, node, ts in open_tasks]
        timers = conn.exec_driver_sql(
            "SELECT i.business_key || ' (' || left(i.id::text, 8) || ')', count(t.id), "
            "count(t.id) FILTER (WHERE t.state = 'FIRED') FROM process_instances i "
            "LEFT JOIN timers t ON t.instance_id = i.id AND t.node_id = %(n)s "
            "WHERE i.process_key = %(k)s GROUP BY i.business_key, i.id",
            {"n": TIMER, "k": KEY},
        ).all()
        fired = conn.exec_driver_sql(
            "SELECT i.business_key || ' (' || left(i.id::text, 8) || ')', count(*) "
            "FROM engine_events e JOIN process_instances i ON i.id = e.instance_id "
            "WHERE e.type = 'TimerFired' AND i.process_key = %(k)s GROUP BY i.business_key, i.id",
            {"k": KEY},
        ).all()
    fired_events = {str(bk): int(n) for bk, n in fired}
    for bk, total, n_fired in timers:
        if (total, n_fired) != (1, 1):
            out.append(f"{bk}: {total} timer(s) at {TIMER}, {n_fired} fired (expected 1, 1)")
        if fired_events and fired_events.get(str(bk), 0) > 1:
            out.append(f"{bk}: the timer fired {fired_events[str(bk)]} times")
    return out


def history(db: Database, found: Sequence[Instance]) -> list[str]:
    """Runtime rows and history agree for every instance (tests/helpers/invariants.py)."""
    from tests.helpers.invariants import history_problems, trace_problems

    out = []
    for inst in found:
        problems = history_problems(db, inst.id) + trace_problems(db, inst.id)
        out += [f"{inst.business_key}: {p}" for p in problems[:5]]
    return out


def describe_stuck(db: Database, found: Sequence[Instance]) -> list[str]:
    """For each instance that has not ended: where its live tokens and open tasks are."""
    out = []
    for inst in found:
        if inst.state in ENDED and inst.state != "FAILED":
            continue
        with db.transaction() as conn:
            tokens: Sequence[Any] = conn.exec_driver_sql(
                "SELECT node_id, state, wait_kind, mode FROM tokens WHERE instance_id = %(i)s "
                "AND state IN ('ACTIVE', 'WAITING', 'FAILED')",
                {"i": inst.id},
            ).all()
            tasks: Sequence[Any] = conn.exec_driver_sql(
                "SELECT node_id, kind, state, attempts, lock_owner, error_message "
                "FROM external_tasks WHERE instance_id = %(i)s AND state NOT IN "
                "('DONE', 'CANCELLED')",
                {"i": inst.id},
            ).all()
        out.append(
            f"{inst.business_key} {inst.state} ({inst.id}): tokens "
            f"{[tuple(t) for t in tokens]}; open tasks "
            f"{[(t[0], t[1], t[2], t[3], t[4], (t[5] or '')[:120]) for t in tasks]}"
        )
    return out
