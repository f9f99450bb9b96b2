"""Firing timers: once, on time, across crashes and double beats.

The timer scan claims due timers in bounded batches and fires each in its own transaction,
which locks the timer row (its instance's row first, as every lock of the engine: a second
scanner waits there, then finds the timer fired; ``SKIP LOCKED`` for the timer itself) and
moves it SCHEDULED -> FIRED under its version together with the token it wakes, so two
scanners never fire one timer twice. A boundary timer racing the task's completion has one
winner: whichever commits first changes the token and the timer; the other finds them changed
and backs off.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from bpm.definitions.model import NodeType, ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Next, Stale, Tx
from bpm.engine.operations import start_timers
from bpm.engine.semantics import (
    event_gateway_wins,
    event_gateways,
    event_subprocesses,
    steps,
    timer_events,
    waits,
    writes,
)
from bpm.states import TimerState, TokenEvent
from bpm.store import start_timers as start_timer_rows
from bpm.store import timers
from bpm.store.rows import TimerRow, TokenRow

log = logging.getLogger("bpm.timers")


@dataclass(frozen=True)
class Fired:
    timer_id: UUID
    lateness: timedelta


def scan_timers(core: EngineCore, now: datetime, batch: int = 500) -> list[Fired]:
    """Fire every timer due at ``now`` (up to ``batch``), and start the instances timer start
    events are due for; returns the timers this call fired."""
    with core.db.transaction() as conn:
        due = timers.claim_due(conn, now, batch)
    fired: list[Fired] = []
    for timer in due:
        try:
            result = core.retrying(functools.partial(fire, core, timer.id, now))
        except Stale as exc:
            log.info("timer no-op: %s", exc, extra={"action": "stale"})
            continue
        if result is not None:
            fired.append(result)
    started = start_timers.scan(core, now)
    if started:
        log.info(
            "timer start events started %d instance(s)",
            started,
            extra={"action": "started", "count": started},
        )
    if fired:
        worst = max(f.lateness for f in fired).total_seconds() * 1000
        log.info(
            "fired %d timer(s), lateness max %.0f ms",
            len(fired),
            worst,
            extra={"action": "fired", "count": len(fired), "lateness_ms": worst},
        )
    return fired


def fire(core: EngineCore, timer_id: UUID, now: datetime) -> Fired | None:
    """Fire one timer in its own transaction; its follow-up work is dispatched after commit."""
    with core.transaction("timer") as tx:
        timer = tx.lock_timer(timer_id)
        if timer is None or timer.state != TimerState.SCHEDULED or timer.fire_at > now:
            raise Stale(
                f"timer {timer_id} is not due and scheduled (taken by another scanner, "
                f"fired, or cancelled)"
            )
        tok = tx.token(timer.token_id)
        g = core.graph(core.info_for(tx, timer.instance_id)[0], tx.conn)
        node = g.node(timer.node_id)
        if node.type is NodeType.START:  # the timer start of an event subprocess
            started = _start_event_subprocess(tx, g, timer, tok)
            if started is None:
                return None
            lateness, result = started
        elif event_gateways.waits_here(g, tok, node):  # a timer after an event-based gateway
            assert tok is not None
            lateness = writes.fire_timer(tx, timer)
            result = event_gateway_wins.timer_won(tx, g, tok, node)
        else:
            if not timer_events.still_waiting(node, tok):
                # Every path off a node disarms its timers; this one is left over: retire it.
                writes.cancel_timer(tx, timer, "its token is no longer waiting there")
                return None
            assert tok is not None
            lateness = writes.fire_timer(tx, timer)
            result = timer_events.wake(tx, g, node, tok)
        nxt = steps.carry_through(tx, g, result)
    core.send_next(nxt)
    return Fired(timer.id, lateness)


def _start_event_subprocess(
    tx: Tx, g: ProcessGraph, timer: TimerRow, host: TokenRow | None
) -> tuple[timedelta, Next] | None:
    """A timer start fires: its event subprocess starts, if its scope still listens (else
    the timer is left over from a scope that ended: it is retired)."""
    found = event_subprocesses.timer_subscription(tx, g, g.node(timer.node_id), host)
    if found is None:
        writes.cancel_timer(tx, timer, "its scope is no longer running")
        return None
    tree, sub = found
    lateness = writes.fire_timer(tx, timer)
    trigger = g.node(timer.node_id)
    if trigger.timer is not None and trigger.timer.kind == "cycle" and not trigger.interrupting:
        # a cycle starts its non-interrupting event subprocess again at each tick
        waits.rearm_cycle(tx, sub.host, trigger)
    data = {"timer_id": str(timer.id)}
    return lateness, event_subprocesses.start(tx, g, tree, sub, TokenEvent.TIMER_FIRED, data)


def next_due(core: EngineCore) -> datetime | None:
    with core.db.transaction() as conn:
        found = [timers.next_due(conn), start_timer_rows.next_due(conn)]
    return min((d for d in found if d is not None), default=None)


__all__ = ["Fired", "fire", "next_due", "scan_timers"]
