"""Timer start events: the schedule of each key's latest definition, and the scan that
starts an instance when a tick is due.

Deploying a version arms its timer start events and disarms those of the versions before it
(a redeploy replaces the schedule, as in Camunda 7); deleting a deployment disarms its
definitions and arms the version that is latest again. Firing a tick is one transaction: the
schedule row is locked (another scanner skips it) and moved on under its version, and the
instance is created with a start key made of the definition, the start event and the due
time, so a tick starts one instance whatever the beats and the crashes. A cycle's next tick
is the first after now: after an outage the missed ticks start one instance, not one each.
"""

from __future__ import annotations

import functools
import logging
from datetime import datetime
from typing import Any

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Conflict, Stale, Tx
from bpm.engine.semantics import instances as instance_rows
from bpm.store import definitions, start_timers
from bpm.store.rows import DefinitionRow
from bpm.store.start_timers import StartTimer

log = logging.getLogger("bpm.timers")


def arm(tx: Tx, row: DefinitionRow, graph: ProcessGraph | None) -> None:
    """A new latest version: its timer start events (``graph``'s; None when it has none)
    replace the schedule of the key."""
    older = definitions.ids_of_key(tx.conn, row.key)
    start_timers.disarm(tx.conn, [i for i in older if i != row.id])
    if graph is None:
        return
    for node_id in graph.timer_starts:
        timer = graph.node(node_id).timer
        assert timer is not None
        first = timer.fire_at(tx.now, {})
        start_timers.arm(tx.conn, row.id, node_id, first, tx.now)


def scan(core: EngineCore, now: datetime, batch: int = 100) -> int:
    """Start an instance for every due tick (up to ``batch``); returns how many started."""
    with core.db.transaction() as conn:
        due = start_timers.due(conn, now, batch)
    started = 0
    for timer in due:
        try:
            if core.retrying(functools.partial(_fire, core, timer, now)):
                started += 1
        except Stale as exc:
            log.info("timer start no-op: %s", exc, extra={"action": "stale"})
    return started


def _fire(core: EngineCore, timer: StartTimer, now: datetime) -> bool:
    with core.transaction("timer") as tx:
        locked = start_timers.lock(tx.conn, timer)
        if locked is None or locked.version != timer.version or locked.fire_at > now:
            raise Stale(f"timer start {timer.node_id!r} was fired by another scanner")
        row = definitions.by_id(tx.conn, locked.definition_id)
        if row is None:
            raise Stale(f"the definition of timer start {timer.node_id!r} is gone")
        graph = core.graph(row.id, tx.conn)
        spec = graph.node(locked.node_id).timer
        assert spec is not None
        again = spec.kind == "cycle"  # only a cycle repeats
        tick = spec.next_tick(now, locked.armed_at, locked.fired + 1, {}) if again else None
        if not start_timers.move_on(tx.conn, locked, tick):
            raise Conflict(f"timer start {timer.node_id!r} moved meanwhile")
        key = f"timer:{locked.node_id}:{locked.fire_at.isoformat()}:{row.id}"
        made = instance_rows.create(
            tx, row, graph, {}, business_key=None, start_key=key, start_event=locked.node_id
        )
        if made is None:
            return False  # this due time already started its instance
        _, root = made
        tx.advance_later(root.id, 0)
    return True


def next_due(core: EngineCore) -> datetime | None:
    with core.db.transaction() as conn:
        return start_timers.next_due(conn)


def arm_latest(tx: Tx, core: EngineCore, keys: set[str]) -> None:
    """Versions of ``keys`` were deleted: the version that is latest again takes the
    schedule (if it has timer start events and they are not armed)."""
    for key in sorted(keys):
        latest = definitions.latest(tx.conn, key)
        if latest is None or start_timers.of_definition(tx.conn, latest.id):
            continue
        graph = core.graph(latest.id, tx.conn)
        if graph.timer_starts:
            arm(tx, latest, graph)


def scheduled(core: EngineCore, key: str | None) -> list[dict[str, Any]]:
    with core.db.transaction() as conn:
        rows = start_timers.all_armed(conn)
        keys = {r.definition_id: definitions.by_id(conn, r.definition_id) for r in rows}
    out = [
        {
            "key": found.key,
            "definition_id": str(r.definition_id),
            "node_id": r.node_id,
            "fire_at": r.fire_at.isoformat(),
            "fired": r.fired,
        }
        for r in rows
        if (found := keys[r.definition_id]) is not None and (key is None or found.key == key)
    ]
    return sorted(out, key=lambda item: item["fire_at"])
