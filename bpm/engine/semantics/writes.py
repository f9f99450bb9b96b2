"""Timers, incidents and compensation records: each write and its history row in one call.

These rows are written by statements of their own as the transaction goes (a timer's or an
incident's row is not in the write batch), so the write and the row that records it are kept
together here: no caller builds one without the other. A change of a row that already exists
locks the instance's row first (``Tx.lock_instance``: the engine's lock order); a new row
needs no lock, as no other transaction can be waiting for it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from bpm.definitions.model import Node
from bpm.engine.core.tx import Conflict, Tx
from bpm.states import EngineEvent, RecordState, TimerState
from bpm.store import compensation, incidents, timers
from bpm.store.ids import new_id
from bpm.store.rows import IncidentRow, RecordRow, TimerRow, TokenRow

# --- timers ------------------------------------------------------------------------------


def schedule_timer(tx: Tx, tok: TokenRow, timer_node: Node, fire_at: datetime) -> TimerRow:
    """A SCHEDULED timer of ``timer_node`` owned by ``tok``."""
    assert timer_node.timer is not None
    row = TimerRow(
        new_id(), tok.id, tok.instance_id, timer_node.id, fire_at, TimerState.SCHEDULED, 0, tx.now
    )
    timers.insert(tx.conn, [row])
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.TIMER_SCHEDULED,
        node_id=timer_node.id,
        token_id=tok.id,
        actor=tx.actor,
        data={
            "timer_id": str(row.id),
            "fire_at": fire_at.isoformat(),
            "timer": timer_node.timer.source,
        },
    )
    return row


def cancel_timer(tx: Tx, timer: TimerRow, reason: str) -> None:
    """SCHEDULED -> CANCELLED under its version; ``Conflict`` if it fired or was cancelled."""
    tx.lock_instance(timer.instance_id)
    _finish_timer(tx, timer, TimerState.CANCELLED)
    tx.history.engine(
        instance_id=timer.instance_id,
        at=tx.now,
        type=EngineEvent.TIMER_CANCELLED,
        node_id=timer.node_id,
        token_id=timer.token_id,
        actor=tx.actor,
        data={"timer_id": str(timer.id), "reason": reason},
    )


def fire_timer(tx: Tx, timer: TimerRow) -> timedelta:
    """SCHEDULED -> FIRED under its version; returns how late it fired."""
    tx.lock_instance(timer.instance_id)
    _finish_timer(tx, timer, TimerState.FIRED)
    lateness = tx.now - timer.fire_at
    tx.history.engine(
        instance_id=timer.instance_id,
        at=tx.now,
        type=EngineEvent.TIMER_FIRED,
        node_id=timer.node_id,
        token_id=timer.token_id,
        actor=tx.actor,
        data={
            "timer_id": str(timer.id),
            "due": timer.fire_at.isoformat(),
            "lateness_ms": round(lateness.total_seconds() * 1000),
        },
    )
    return lateness


def _finish_timer(tx: Tx, timer: TimerRow, state: TimerState) -> None:
    if not timers.finish(tx.conn, timer, state):
        raise Conflict(f"timer {timer.id} fired or was cancelled meanwhile")


# --- incidents ---------------------------------------------------------------------------


def open_incident(
    tx: Tx,
    tok: TokenRow,
    *,
    kind: str,
    message: str,
    details: str | None,
    task_id: UUID | None,
) -> IncidentRow:
    """An OPEN incident at ``tok``'s node, for an operator to look at. The instance's row is
    locked first: the instance FAILS with it."""
    tx.lock_instance(tok.instance_id)
    incident = incidents.open_incident(
        tx.conn,
        instance_id=tok.instance_id,
        token_id=tok.id,
        task_id=task_id,
        node_id=tok.node_id,
        kind=kind,
        message=message,
        details=details,
        now=tx.now,
    )
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.INCIDENT_OPENED,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
        data={"incident_id": str(incident.id), "kind": kind, "message": message},
    )
    return incident


def resolve_incident(tx: Tx, incident: IncidentRow, reason: str) -> None:
    """OPEN -> RESOLVED under its version; ``Conflict`` if it changed meanwhile."""
    tx.lock_instance(incident.instance_id)
    if not incidents.resolve(tx.conn, incident, tx.now):
        raise Conflict(f"incident {incident.id} changed while it was being resolved")
    tx.history.engine(
        instance_id=incident.instance_id,
        at=tx.now,
        type=EngineEvent.INCIDENT_RESOLVED,
        node_id=incident.node_id,
        token_id=incident.token_id,
        actor=tx.actor,
        data={"incident_id": str(incident.id), "reason": reason},
    )


# --- compensation records ----------------------------------------------------------------


def record_compensation(tx: Tx, tok: TokenRow, node: Node, owner: UUID) -> RecordRow:
    """A PENDING record of how to undo ``node``, which ``tok`` just completed; ``owner`` is
    the token the record belongs to (the visit of a subprocess's body)."""
    assert node.compensation is not None
    return _record(tx, tok, node, owner, node.compensation.describe(), None)


def record_call(tx: Tx, tok: TokenRow, node: Node, called_instance_id: UUID) -> RecordRow:
    """A PENDING record for a call activity whose called instance left successes to undo:
    it stands for that instance's own records (``called_compensation``)."""
    handler = f"the records of called instance {called_instance_id}"
    return _record(tx, tok, node, tok.id, handler, called_instance_id)


def _record(
    tx: Tx, tok: TokenRow, node: Node, owner: UUID, handler: str, called: UUID | None
) -> RecordRow:
    rec = compensation.record(
        tx.conn,
        instance_id=tok.instance_id,
        token_id=owner,
        node_id=node.id,
        scope_id=tok.scope_id,
        handler=handler,
        now=tx.now,
        called_instance_id=called,
    )
    data = {"record_id": str(rec.id), "seq": rec.seq, "handler": rec.handler}
    if called is not None:
        data["called_instance_id"] = str(called)
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.COMPENSATION_RECORDED,
        node_id=node.id,
        token_id=tok.id,
        actor=tx.actor,
        data=data,
    )
    return rec


def complete_record(tx: Tx, tok: TokenRow) -> None:
    """The compensation token ``tok`` succeeded: its record is COMPLETED (``Conflict`` if it
    was finished meanwhile)."""
    tx.lock_instance(tok.instance_id)
    if tok.record_id is not None and not compensation.finish(
        tx.conn, tok.record_id, RecordState.COMPLETED
    ):
        raise Conflict(f"compensation record {tok.record_id} was finished meanwhile")
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.COMPENSATION_COMPLETED,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
        data={"record_id": str(tok.record_id)},
    )


def fail_record(tx: Tx, tok: TokenRow, message: str) -> None:
    """The compensation token ``tok`` failed: its record is FAILED (an operator's retry can
    still complete it)."""
    tx.lock_instance(tok.instance_id)
    if tok.record_id is not None:
        compensation.finish(tx.conn, tok.record_id, RecordState.FAILED)
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.COMPENSATION_FAILED,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
        data={"record_id": str(tok.record_id), "error": message},
    )


def cancel_records(tx: Tx, tok: TokenRow, record_ids: list[UUID], reason: str) -> None:
    """Records whose compensation ``tok`` was carrying out, or still had to, will not be
    compensated any more: PENDING ones become CANCELLED, one history row each."""
    if not record_ids:
        return
    tx.lock_instance(tok.instance_id)
    for rec in compensation.cancel(tx.conn, record_ids):
        tx.history.engine(
            instance_id=tok.instance_id,
            at=tx.now,
            type=EngineEvent.COMPENSATION_CANCELLED,
            node_id=rec.node_id,
            token_id=tok.id,
            actor=tx.actor,
            data={"record_id": str(rec.id), "seq": rec.seq, "reason": reason},
        )
