"""Cancelling what a token leaves behind: its task, its timers, its incidents, its scope."""

from __future__ import annotations

from uuid import UUID

from bpm.engine.core.tx import Tx
from bpm.engine.semantics import records, task_moves, writes
from bpm.engine.semantics.instance_state import resume_if_clear, set_instance_state
from bpm.engine.semantics.moves import move
from bpm.engine.semantics.tree import Tree
from bpm.states import (
    ENDED_INSTANCE,
    LIVE_TOKEN,
    InstanceState,
    TaskEvent,
    TaskState,
    TokenEvent,
    TokenState,
    WaitKind,
)
from bpm.store import incidents, instances, tasks
from bpm.store.rows import TimerRow, TokenRow


def cancel_token(tx: Tx, tok: TokenRow, reason: str) -> None:
    """Cancel a live token with its open task and open incidents (and the compensation
    records it was carrying out or still had to)."""
    records.cut_short(tx, tok, reason)
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
    if tok.wait_kind == WaitKind.CALLED:
        cancel_called(tx, tok, reason)


def cancel_called(tx: Tx, tok: TokenRow, reason: str) -> None:
    """The call activity ``tok`` waits at is left (cancelled, interrupted, terminated): the
    instance it called is cancelled with it, and so on down the chain of calls. Its row is
    locked after the caller's, as locks always go down a chain of calls."""
    child = instances.called_by(tx.conn, tok.id)
    if child is None or child.state in ENDED_INSTANCE:
        return
    locked = tx.locked_instance(child.id)
    if locked is None or locked.state in ENDED_INSTANCE:
        return
    why = f"{reason} (its caller's call activity {tok.node_id!r} was left)"
    for row in tx.tokens_of(child.id):
        if row.state in LIVE_TOKEN:
            cancel_token(tx, row, why)
    set_instance_state(tx, child.id, InstanceState.CANCELLED)


def cancel_descendants(tx: Tx, tok: TokenRow, reason: str) -> None:
    """Cancel every live token inside the subprocess ``tok`` waits at (it is left early)."""
    cancel_inside(tx, tok, Tree.read(tx, tok.instance_id).inside(tok), reason)


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


def cancel_timers(tx: Tx, tok: TokenRow, reason: str) -> int:
    """Cancel the token's SCHEDULED timers (it left the node they belong to)."""
    count = 0
    for timer in tx.scheduled_timers(tok):
        if _process_subscription(tx, tok, timer):
            continue
        writes.cancel_timer(tx, timer, reason)
        count += 1
    return count


def _process_subscription(tx: Tx, tok: TokenRow, timer: TimerRow) -> bool:
    """A timer start of a process-level event subprocess, held by the root token while it is
    live: the root also walks the main path, and leaving a node there does not end the
    process (``event_subprocesses.disarm`` removes these when it does)."""
    if tok.parent_token_id is not None or tx.graph_for is None:
        return False
    g = tx.graph_for(tok.instance_id)
    return (
        g.node(timer.node_id).scope in g.event_subprocesses.get(None, ())
        and tx.current(tok).state in LIVE_TOKEN
    )


def cancel_task(tx: Tx, task_id: UUID, reason: str) -> None:
    task = tasks.get(tx.conn, task_id)
    if task is None or task.state in (TaskState.DONE, TaskState.CANCELLED):
        return
    task_moves.change(
        tx,
        task,
        state=TaskState.CANCELLED,
        event=TaskEvent.CANCELLED,
        data={"reason": reason},
        miss="conflict",
        message=f"task {task.id} changed while it was being cancelled",
    )


def resolve_incidents(tx: Tx, token_id: UUID, reason: str) -> int:
    count = 0
    for incident in incidents.open_of_token(tx.conn, token_id):
        writes.resolve_incident(tx, incident, reason)
        count += 1
    return count
