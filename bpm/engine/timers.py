"""Firing timers: once, on time, across crashes and double beats.

The timer scan claims due timers in bounded batches and fires each in its own transaction,
which locks the timer row with ``SKIP LOCKED`` (another scanner has it: skip) and moves it
SCHEDULED -> FIRED under its version together with the token it wakes, so two scanners never
fire one timer twice. A boundary timer racing the task's completion has one winner: whichever
commits first changes the token and the timer; the other finds them changed and backs off.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from uuid import UUID

from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.engine.failures import cancel_descendants, cancel_task, cancel_timers
from bpm.engine.moves import create, move, new_token
from bpm.engine.nodes import leave
from bpm.engine.tx import Conflict, Next, NextToken, Stale, Tx
from bpm.states import EngineEvent, TimerState, TokenEvent, TokenState
from bpm.store import tasks, timers, tokens
from bpm.store.rows import TokenRow

if TYPE_CHECKING:
    from bpm.engine.engine import Engine

log = logging.getLogger("bpm.timers")


@dataclass(frozen=True)
class Fired:
    timer_id: UUID
    lateness: timedelta


def scan_timers(engine: Engine, now: datetime, batch: int = 500) -> list[Fired]:
    """Fire every timer due at ``now`` (up to ``batch``); returns what this call fired."""
    with engine.db.transaction() as conn:
        due = timers.claim_due(conn, now, batch)
    fired: list[Fired] = []
    for timer in due:
        try:
            result = engine.retrying(functools.partial(fire, engine, timer.id, now))
        except Stale as exc:
            log.info("timer no-op: %s", exc, extra={"action": "stale"})
            continue
        if result is not None:
            fired.append(result)
    if fired:
        worst = max(f.lateness for f in fired).total_seconds() * 1000
        log.info(
            "fired %d timer(s), lateness max %.0f ms",
            len(fired),
            worst,
            extra={"action": "fired", "count": len(fired), "lateness_ms": worst},
        )
    return fired


def fire(engine: Engine, timer_id: UUID, now: datetime) -> Fired | None:
    """Fire one timer in its own transaction; its follow-up work is dispatched after commit."""
    with engine.transaction("timer") as tx:
        timer = timers.get(tx.conn, timer_id, lock=True)
        if timer is None or timer.state != TimerState.SCHEDULED or timer.fire_at > now:
            raise Stale(
                f"timer {timer_id} is not due and scheduled (taken by another scanner, "
                f"fired, or cancelled)"
            )
        tok = tokens.get(tx.conn, timer.token_id)
        g = engine.graph(engine.info_for(tx, timer.instance_id)[0], tx.conn)
        node = g.node(timer.node_id)
        if not _still_waiting(node, tok):
            # Every path off a node disarms its timers; this one is left over: retire it.
            if not timers.finish(tx.conn, timer, TimerState.CANCELLED):
                raise Conflict(f"timer {timer_id} changed while it was retired")
            tx.history.engine(
                instance_id=timer.instance_id,
                at=tx.now,
                type=EngineEvent.TIMER_CANCELLED,
                node_id=node.id,
                token_id=timer.token_id,
                actor=tx.actor,
                data={"timer_id": str(timer.id), "reason": "its token is no longer waiting there"},
            )
            return None
        assert tok is not None
        if not timers.finish(tx.conn, timer, TimerState.FIRED):
            raise Conflict(f"timer {timer_id} changed while it fired")
        lateness = tx.now - timer.fire_at
        tx.history.engine(
            instance_id=timer.instance_id,
            at=tx.now,
            type=EngineEvent.TIMER_FIRED,
            node_id=node.id,
            token_id=timer.token_id,
            actor=tx.actor,
            data={
                "timer_id": str(timer.id),
                "due": timer.fire_at.isoformat(),
                "lateness_ms": round(lateness.total_seconds() * 1000),
            },
        )
        result = _wake(tx, g, node, tok)
        nxt = engine.continue_in(tx, g, result)
    engine.carry_on(nxt)
    return Fired(timer.id, lateness)


def _still_waiting(node: Node, tok: TokenRow | None) -> bool:
    where = node.id if node.type is NodeType.TIMER else node.attached_to
    return tok is not None and tok.state == TokenState.WAITING and tok.node_id == where


def _wake(tx: Tx, g: ProcessGraph, node: Node, tok: TokenRow) -> Next:
    if node.type is NodeType.TIMER:
        return leave(tx, g, tok, node)
    if node.interrupting:
        return _interrupt(tx, g, tok, node)
    return _spawn(tx, tok, node)


def _interrupt(tx: Tx, g: ProcessGraph, tok: TokenRow, boundary: Node) -> Next:
    """Leave the activity: its task (even one a worker holds) or its subprocess tokens are
    cancelled, its other timers disarmed, and the token takes the boundary's path."""
    reason = f"interrupted by timer {boundary.id!r}"
    task = tasks.open_of_token(tx.conn, tok.id)
    if task is not None:
        cancel_task(tx, task.id, reason)
    if g.node(tok.node_id).type is NodeType.SUBPROCESS:
        cancel_descendants(tx, tok, reason)
    cancel_timers(tx, tok, reason)
    moved = move(
        tx,
        tok,
        state=TokenState.ACTIVE,
        event=TokenEvent.TIMER_FIRED,
        node_id=boundary.id,
        via_flow=None,
        data={"boundary": boundary.id, "left": tok.node_id},
    )
    return NextToken(moved.id, moved.version, moved)


def _spawn(tx: Tx, tok: TokenRow, boundary: Node) -> Next:
    """Non-interrupting: a new token takes the boundary's path; the activity stays open."""
    parent = tok.parent_token_id if tok.concurrent else tok.id
    spawned = new_token(
        tx,
        instance_id=tok.instance_id,
        node_id=boundary.id,
        parent=parent,
        scope_id=tok.scope_id,
        concurrent=True,
        via_flow=None,
    )
    create(tx, [spawned], [(tok.id, spawned.id, "FORK")])
    return NextToken(spawned.id, 0)


def next_due(engine: Engine) -> datetime | None:
    with engine.db.transaction() as conn:
        return timers.next_due(conn)


__all__ = ["Fired", "fire", "next_due", "scan_timers"]
