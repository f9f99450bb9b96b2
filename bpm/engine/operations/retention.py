"""Retention: delete ended instances, with all their runtime and history rows, past their TTL.

An instance is deleted when it is COMPLETED, TERMINATED or CANCELLED and ``ended_at + ttl <=
now``, where ``ttl`` is its definition's ``historyTimeToLive`` or, for definitions without one,
the installation's default (``BPM_HISTORY_TTL_DAYS``; unset: such instances are kept for ever).
RUNNING and FAILED instances (a FAILED one waits for an operator) are never touched.

Each batch is its own short transaction: it claims up to ``batch`` instance rows with
``FOR UPDATE SKIP LOCKED`` and deletes their rows. It locks nothing but rows of ended
instances, so it never blocks runtime writes; two cleanups at once (two beats) skip each
other's rows, and deleting is idempotent. The history of a deleted instance goes with it, by
design: each batch logs one line with what it deleted instead.
"""

from __future__ import annotations

import logging
import math
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from bpm.definitions.parse.document import MAX_HISTORY_TTL
from bpm.engine.core.engine_core import EngineCore
from bpm.errors import ConfigError
from bpm.store import RetryableDatabaseError
from bpm.store import retention as store

log = logging.getLogger("bpm.retention")

TTL_ENV = "BPM_HISTORY_TTL_DAYS"
#: How long a batch waits for a row lock before it gives up (PostgreSQL): only a runtime
#: transaction touching an instance that has already ended could hold one.
LOCK_WAIT_MS = 2000


@dataclass(frozen=True)
class Sweep:
    """What one cleanup run did."""

    #: Instances deleted.
    deleted: int = 0
    #: Transactions that deleted something (or gave up on a lock).
    batches: int = 0
    #: Rows deleted per table.
    rows: dict[str, int] = field(default_factory=dict)
    #: The run stopped at ``max_batches``: instances past their TTL may be left.
    more: bool = False


def ttl_from_env(environ: Mapping[str, str] | None = None) -> timedelta | None:
    """The default TTL, ``BPM_HISTORY_TTL_DAYS`` (days, >= 0); None when it is unset."""
    raw = (os.environ if environ is None else environ).get(TTL_ENV, "").strip()
    if not raw:
        return None
    try:
        days = float(raw)
    except ValueError:
        days = math.nan
    if not math.isfinite(days) or days < 0 or days > MAX_HISTORY_TTL.days:
        raise ConfigError(
            f"{TTL_ENV} must be a number of days from 0 to "
            f"{MAX_HISTORY_TTL.days}, got {raw!r}; unset, ended instances "
            "without a historyTimeToLive are kept for ever"
        )
    return timedelta(days=days)


def _cutoffs(
    core: EngineCore, now: datetime, default_ttl: timedelta | None
) -> list[tuple[UUID, datetime]]:
    """Per definition that has a TTL (its own, else the default): the latest ``ended_at`` an
    instance may have to be deleted now."""
    with core.db.transaction() as conn:
        ttls = store.definition_ttls(conn)
    found = []
    for def_id, seconds in ttls:
        ttl = timedelta(seconds=seconds) if seconds is not None else default_ttl
        if ttl is None:
            continue
        try:
            found.append((def_id, now - ttl))
        except OverflowError:  # longer than the calendar goes back: nothing is that old
            continue
    return found


def due(core: EngineCore, now: datetime, *, default_ttl: timedelta | None) -> int:
    """How many instances a cleanup at ``now`` would delete (it deletes nothing)."""
    cutoffs = _cutoffs(core, now, default_ttl)
    with core.db.transaction() as conn:
        return sum(store.count_due(conn, def_id, before) for def_id, before in cutoffs)


def sweep(
    core: EngineCore,
    now: datetime,
    *,
    default_ttl: timedelta | None,
    batch: int = 100,
    max_batches: int = 50,
) -> Sweep:
    """Delete up to ``batch * max_batches`` instances past their TTL, ``batch`` at a time."""
    if batch < 1 or max_batches < 1:
        raise ValueError("batch and max_batches must be at least 1")
    deleted, batches, rows = 0, 0, Counter[str]()
    for def_id, before in _cutoffs(core, now, default_ttl):
        while True:
            if batches == max_batches:
                return Sweep(deleted, batches, dict(rows), more=True)
            try:
                ids, counts = _batch(core, def_id, before, batch)
            except RetryableDatabaseError as exc:  # a lock wait or a deadlock: next run
                batches += 1
                log.warning(
                    "history cleanup: gave up a batch of definition %s: %s",
                    def_id,
                    str(exc).strip().splitlines()[0],
                )
                break
            if not ids:
                break
            batches += 1
            gone = counts.get(store.pi.name, 0)
            deleted += gone
            rows.update(counts)
            log.info(
                "history cleanup: deleted %d ended instances of definition %s (%s)",
                gone,
                def_id,
                " ".join(f"{k}={v}" for k, v in counts.items()),
                extra={
                    "action": "cleanup_history",
                    "instances": gone,
                    "definition_id": str(def_id),
                },
            )
            if len(ids) < batch:
                break
    return Sweep(deleted, batches, dict(rows), more=False)


def _batch(
    core: EngineCore, def_id: UUID, ended_before: datetime, limit: int
) -> tuple[list[UUID], dict[str, int]]:
    with core.db.transaction() as conn:
        store.limit_lock_waits(conn, LOCK_WAIT_MS)
        ids = store.claim_due(conn, def_id, ended_before, limit)
        return ids, store.delete_instances(conn, ids)


def cleanup(
    core: EngineCore,
    now: datetime,
    *,
    default_ttl: timedelta | None,
    batch: int = 100,
    max_batches: int = 50,
) -> int:
    """Delete ended instances past their TTL (see the module doc); returns how many."""
    return sweep(core, now, default_ttl=default_ttl, batch=batch, max_batches=max_batches).deleted
