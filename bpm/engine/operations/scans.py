"""The stalled-work scans: recovery is re-running them, nothing more.

Each scan claims a bounded batch with ``FOR UPDATE SKIP LOCKED`` and only sends nudges; the
jobs re-check everything under version checks, so two scanners at once, or a scan racing the
job it re-sends, do no harm. Every scan takes ``now`` so tests can move time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER, Job, JobName
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Stale
from bpm.engine.semantics import handler_runs
from bpm.store import signals, tasks, tokens


@dataclass(frozen=True)
class ScanConfig:
    #: How long a row may sit untouched before a scan assumes its nudge was lost.
    grace: timedelta = timedelta(seconds=30)
    batch: int = 500


def scan_stalled_tokens(core: EngineCore, now: datetime, cfg: ScanConfig = ScanConfig()) -> int:
    """ACTIVE tokens nobody advanced within the grace period: nudge them again."""
    with core.db.transaction() as conn:
        found = tokens.stalled_active(conn, now - cfg.grace, cfg.batch, now)
    _send(core, [Job(ADVANCE_TOKEN, {"token_id": str(t), "expected_version": v}) for t, v in found])
    return len(found)


def scan_ready_tasks(core: EngineCore, now: datetime, cfg: ScanConfig = ScanConfig()) -> int:
    """READY handler tasks whose retry time has come or whose job was lost: run them."""
    with core.db.transaction() as conn:
        found = tasks.due_handler_tasks(conn, now, now - cfg.grace, cfg.batch)
    _send(core, [Job(RUN_HANDLER, {"task_id": str(t)}) for t in found])
    return len(found)


def scan_waiting_parents(core: EngineCore, now: datetime, cfg: ScanConfig = ScanConfig()) -> int:
    """WAITING parents whose children are done or parked at a join: let them decide."""
    with core.db.transaction() as conn:
        found = tokens.parents_to_recheck(conn, now - cfg.grace, cfg.batch, now)
    _send(core, [Job(ADVANCE_TOKEN, {"token_id": str(t), "expected_version": v}) for t, v in found])
    return len(found)


def scan_unfinished_signals(core: EngineCore, now: datetime, cfg: ScanConfig = ScanConfig()) -> int:
    """Signals thrown more than the grace period ago with deliveries left (their job was
    lost, or its worker killed): send their delivery job again. A second run beside a live
    one only skips the rows that one holds."""
    with core.db.transaction() as conn:
        found = signals.unfinished(conn, now - cfg.grace, cfg.batch)
    _send(core, [Job(JobName.DELIVER_SIGNAL, {"signal_id": str(s)}) for s in found])
    return len(found)


def scan_expired_locks(core: EngineCore, now: datetime, cfg: ScanConfig = ScanConfig()) -> int:
    """Locked tasks whose runner or external worker never reported back: the run counts as an
    attempt; the task is offered again, or fails when no attempt is left."""
    with core.db.transaction() as conn:
        expired = tasks.expired_locks(conn, now, cfg.batch)
    done = 0
    for task in expired:
        try:
            with core.transaction("scan") as tx:
                fresh = tasks.get(tx.conn, task.id)
                if fresh is None or fresh.version != task.version:
                    raise Stale(f"task {task.id} moved on")
                def_id, _, _ = core.info_for(tx, task.instance_id)
                handler_runs.expire_lock(tx, core.graph(def_id, tx.conn), fresh)
                done += 1
        except Stale:
            continue
    return done


def _send(core: EngineCore, jobs: list[Job]) -> None:
    if jobs:
        core.dispatcher.dispatch(jobs)
