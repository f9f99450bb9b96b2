"""Failing a token, opening its incident, and cancelling what a token leaves behind."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from uuid import UUID

from bpm.engine.moves import move
from bpm.engine.tx import Conflict, Tx
from bpm.states import (
    ENDED_INSTANCE,
    LIVE_TOKEN,
    EngineEvent,
    InstanceState,
    TaskEvent,
    TaskState,
    TimerState,
    TokenEvent,
    TokenMode,
    TokenState,
)
from bpm.store import incidents, instances, tasks, timers, tokens
from bpm.store.rows import TokenRow

#: As a tuple: it is sent to the database as an array.
LIVE_INSTANCE = (InstanceState.RUNNING, InstanceState.FAILED)
_EVENT_OF_STATE = {
    InstanceState.RUNNING: EngineEvent.INSTANCE_RESUMED,
    InstanceState.COMPLETED: EngineEvent.INSTANCE_COMPLETED,
    InstanceState.FAILED: EngineEvent.INSTANCE_FAILED,
    InstanceState.TERMINATED: EngineEvent.INSTANCE_TERMINATED,
    InstanceState.CANCELLED: EngineEvent.INSTANCE_CANCELLED,
}


def fail_token(
    tx: Tx,
    tok: TokenRow,
    *,
    kind: str,
    message: str,
    details: str | None = None,
    task_id: UUID | None = None,
) -> TokenRow:
    """Token -> FAILED and engine event ``TokenFailed``; then the saga its scope declares, or
    (saga scope ``none``) an open incident and the instance FAILED, waiting for an operator:
    retry the token, or cancel the instance. A compensation token's failure
    is not compensated: it opens an incident and its saga goes on.
    """
    from bpm.engine import sagas  # sagas builds on this module

    failed = move(
        tx, tok, state=TokenState.FAILED, event=TokenEvent.FAILED, data={"error": message}
    )
    cancel_timers(tx, tok, reason="the token failed")
    if tok.mode == TokenMode.COMPENSATION:
        sagas.compensation_failed(tx, tok, failed, message, details, task_id)
        return failed
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.TOKEN_FAILED,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
        data={"error": message, "kind": kind},
    )
    if tx.graph_for is not None and sagas.start_if_declared(
        tx, tx.graph_for(tok.instance_id), failed, message
    ):
        return failed
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
    set_instance_state(
        tx, tok.instance_id, InstanceState.FAILED, only_from=(InstanceState.RUNNING,)
    )
    return failed


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
    update cannot lose against them. ``expected``: the caller knows the instance is in
    ``only_from`` unless something changed it meanwhile (its last token just ended); on
    PostgreSQL the change then goes into the write batch, where a mismatch fails the whole
    transaction as a conflict, instead of costing a statement of its own.
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
        return True  # or the whole write is refused
    if tx.conn.dialect.name == "postgresql":  # one round trip: lock and change together
        left = instances.transition(tx.conn, instance_id, state, tx.now, ended, only_from)
        if left is None:
            return False
    else:
        inst = instances.get(tx.conn, instance_id, for_update=True)
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
    return True


def cancel_token(tx: Tx, tok: TokenRow, reason: str) -> None:
    """Cancel a live token with its open task and open incidents."""
    move(tx, tok, state=TokenState.CANCELLED, event=TokenEvent.CANCELLED, data={"reason": reason})
    end_work(tx, tok, reason)


def end_work(tx: Tx, tok: TokenRow, reason: str) -> None:
    """The token stops what it was doing where it is: its open task is cancelled, its
    timers disarmed, its open incidents resolved (the token itself is not moved)."""
    task = tasks.open_of_token(tx.conn, tok.id)
    if task is not None:
        cancel_task(tx, task.id, reason)
    cancel_timers(tx, tok, reason)
    resolve_incidents(tx, tok.id, reason)


def cancel_descendants(tx: Tx, tok: TokenRow, reason: str) -> None:
    """Cancel every live token inside the subprocess ``tok`` waits at (it is left early)."""
    tx.flush_tokens()
    cancel_inside(tx, tok, inside_scope(tokens.of_instance(tx.conn, tok.instance_id), tok), reason)


def inside_scope(rows: Iterable[TokenRow], host: TokenRow) -> list[TokenRow]:
    """The tokens below ``host`` that run inside its subprocess. The paths its own
    non-interrupting boundaries started are its children too, but run outside it."""
    return below(rows, host, lambda child: child.scope_id == host.node_id)


def below(
    rows: Iterable[TokenRow], top: TokenRow, keep: Callable[[TokenRow], bool] = lambda child: True
) -> list[TokenRow]:
    """Every token under ``top`` (of ``rows``: an instance's), through the children that
    ``keep`` accepts at the first level."""
    children: dict[UUID | None, list[TokenRow]] = {}
    for row in rows:
        children.setdefault(row.parent_token_id, []).append(row)
    todo = [c for c in children.get(top.id, []) if keep(c)]
    out = []
    while todo:
        row = todo.pop()
        out.append(row)
        todo.extend(children.get(row.id, []))
    return out


def cancel_inside(
    tx: Tx, host: TokenRow, inside: list[TokenRow], reason: str, spare: UUID | None = None
) -> None:
    """Cancel the live ones of ``inside`` (but ``spare``). If a failed one held the
    instance's last open incident, the instance runs again: its host goes on elsewhere."""
    failed = False
    for row in inside:
        if row.id != spare and row.state in LIVE_TOKEN:
            failed = failed or row.state == TokenState.FAILED
            cancel_token(tx, row, reason)
    if failed:
        resume_if_clear(tx, host.instance_id)


def resume_if_clear(tx: Tx, instance_id: UUID) -> None:
    """A FAILED instance whose last open incident was just resolved runs again. The instance
    row is locked before counting, so two transactions that each resolve one of the last two
    cannot both see the other's still open."""
    inst = instances.get(tx.conn, instance_id, for_update=True)
    if (
        inst is not None
        and inst.state == InstanceState.FAILED
        and not incidents.of_instance(tx.conn, instance_id, only_open=True)
    ):
        set_instance_state(
            tx, instance_id, InstanceState.RUNNING, only_from=(InstanceState.FAILED,)
        )


def cancel_timers(tx: Tx, tok: TokenRow, reason: str) -> int:
    """Cancel the token's SCHEDULED timers (it left the node they belong to)."""
    count = 0
    for timer in timers.scheduled_of_token(tx.conn, tok.id):
        if not timers.finish(tx.conn, timer, TimerState.CANCELLED):
            raise Conflict(f"timer {timer.id} fired or was cancelled meanwhile")
        tx.history.engine(
            instance_id=timer.instance_id,
            at=tx.now,
            type=EngineEvent.TIMER_CANCELLED,
            node_id=timer.node_id,
            token_id=tok.id,
            actor=tx.actor,
            data={"timer_id": str(timer.id), "reason": reason},
        )
        count += 1
    return count


def cancel_task(tx: Tx, task_id: UUID, reason: str) -> None:
    task = tasks.get(tx.conn, task_id)
    if task is None or task.state in (TaskState.DONE, TaskState.CANCELLED):
        return
    tx.finish_task(
        task,
        state=TaskState.CANCELLED,
        miss="conflict",
        message=f"task {task.id} changed while it was being cancelled",
    )
    tx.history.task(
        instance_id=task.instance_id,
        task_id=task.id,
        token_id=task.token_id,
        at=tx.now,
        type=TaskEvent.CANCELLED,
        node_id=task.node_id,
        from_state=task.state,
        to_state=TaskState.CANCELLED,
        actor=tx.actor,
        data={"reason": reason},
    )


def resolve_incidents(tx: Tx, token_id: UUID, reason: str) -> int:
    count = 0
    for incident in incidents.open_of_token(tx.conn, token_id):
        if not incidents.resolve(tx.conn, incident, tx.now):
            raise Conflict(f"incident {incident.id} changed while it was being resolved")
        tx.history.engine(
            instance_id=incident.instance_id,
            at=tx.now,
            type=EngineEvent.INCIDENT_RESOLVED,
            node_id=incident.node_id,
            token_id=token_id,
            actor=tx.actor,
            data={"incident_id": str(incident.id), "reason": reason},
        )
        count += 1
    return count
