"""An instance's state: changed under its row lock, with its history row."""

from __future__ import annotations

from uuid import UUID

from bpm.engine.core.tx import Conflict, Tx
from bpm.states import ENDED_INSTANCE, EngineEvent, InstanceState, WaitKind
from bpm.store import incidents, instances

#: As a tuple: it is sent to the database as an array.
LIVE_INSTANCE = (InstanceState.RUNNING, InstanceState.FAILED)


_EVENT_OF_STATE = {
    InstanceState.RUNNING: EngineEvent.INSTANCE_RESUMED,
    InstanceState.COMPLETED: EngineEvent.INSTANCE_COMPLETED,
    InstanceState.FAILED: EngineEvent.INSTANCE_FAILED,
    InstanceState.TERMINATED: EngineEvent.INSTANCE_TERMINATED,
    InstanceState.CANCELLED: EngineEvent.INSTANCE_CANCELLED,
}


def set_instance_state(
    tx: Tx,
    instance_id: UUID,
    state: InstanceState,
    only_from: tuple[InstanceState, ...] = LIVE_INSTANCE,
    *,
    expected: bool = False,
) -> bool:
    """Lock the instance row and change its state if it is in one of ``only_from``.

    The row lock serialises branches that fail or finish at the same moment, so the guarded
    update cannot lose against them. It comes before any other row lock of the transaction,
    as the engine's lock order wants (``Tx.lock_instance``): token moves and task changes are
    written at the flush, and any other row was changed after locking this one.

    ``expected``: the caller knows the instance is in ``only_from`` unless something changed
    it meanwhile (its last token just ended); on PostgreSQL the change then goes into the
    write batch, where a mismatch fails the whole transaction as a conflict, instead of
    costing a statement of its own (the batch's statement locks the instance's row first).
    """
    ended = tx.now if state in ENDED_INSTANCE else None
    if expected and tx.conn.dialect.name == "postgresql":
        if tx.batch.ends(instance_id):
            return False
        row = tx.history.engine(
            instance_id=instance_id,
            at=tx.now,
            type=_EVENT_OF_STATE[state],
            to_state=state,
            actor=tx.actor,
        )  # from_state: filled in by the write
        tx.batch.end_instance(instance_id, state, ended, only_from, row)
        nudge_caller(tx, instance_id)
        return True  # or the whole write is refused
    if tx.conn.dialect.name == "postgresql":  # one round trip: lock and change together
        left = instances.transition(tx.conn, instance_id, state, tx.now, ended, only_from)
        tx.note_locked(instance_id)
        if left is None:
            return False
    else:
        inst = tx.locked_instance(instance_id)
        if inst is None or inst.state not in only_from or inst.state == state:
            return False
        if not instances.set_state(tx.conn, inst, state, tx.now, ended):
            raise Conflict(f"instance {instance_id} changed under its row lock")
        left = inst.state
    tx.history.engine(
        instance_id=instance_id,
        at=tx.now,
        type=_EVENT_OF_STATE[state],
        from_state=left,
        to_state=state,
        actor=tx.actor,
    )
    nudge_caller(tx, instance_id)
    return True


def nudge_caller(tx: Tx, instance_id: UUID) -> None:
    """An instance a call activity started has ended, failed or runs again: the calling
    token decides what that means, in a transaction of its own (a called instance never
    locks its caller's rows)."""
    caller = tx.caller_of(instance_id) if tx.caller_of is not None else None
    if caller is None:
        return
    waiting = tx.token(caller[1])
    if waiting is not None and waiting.wait_kind == WaitKind.CALLED:
        tx.advance_later(waiting.id, waiting.version)


def resume_if_clear(tx: Tx, instance_id: UUID) -> None:
    """A FAILED instance whose last open incident was just resolved runs again. The instance
    row is locked before counting, so two transactions that each resolve one of the last two
    cannot both see the other's still open (resolving one locked it already: instance first,
    see ``Tx.lock_instance``)."""
    inst = tx.locked_instance(instance_id)
    if (
        inst is not None
        and inst.state == InstanceState.FAILED
        and not incidents.of_instance(tx.conn, instance_id, only_open=True)
    ):
        set_instance_state(
            tx, instance_id, InstanceState.RUNNING, only_from=(InstanceState.FAILED,)
        )
