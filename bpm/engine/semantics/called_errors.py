"""A BPMN error no boundary of a called instance catches goes up to the call activity that
started it, when that call activity (or a scope around it, or a caller further up the chain)
catches its code; otherwise it stays where it was thrown, with the usual incident.

The called instance's transaction never locks its caller: it records the error in its own
history (``BPMN_ERROR_PROPAGATED``), cancels what still runs in it and ends CANCELLED, which
sends the calling token its job (``instance_state.nudge_caller``). The calling token's own
transaction then throws the error at the call activity (``call_returns``).
"""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

from bpm.engine.core.tx import Tx
from bpm.engine.semantics.bpmn_errors import caught_anywhere
from bpm.engine.semantics.cancelling import cancel_timers, cancel_token
from bpm.engine.semantics.instance_state import set_instance_state
from bpm.engine.semantics.moves import move
from bpm.states import LIVE_TOKEN, EngineEvent, InstanceState, TokenEvent, TokenState, WaitKind
from bpm.store import history, tokens
from bpm.store.rows import TokenRow

#: How far up a chain of calls a search goes (a guard against a cycle of rows).
_DEPTH = 1000


def waiting_callers(tx: Tx, instance_id: UUID) -> Iterator[tuple[UUID, TokenRow]]:
    """Up the chain of calls above ``instance_id``: each calling instance and its token
    waiting at the call activity, for as long as each waits there (reads only)."""
    for _ in range(_DEPTH):
        if tx.caller_of is None:
            return
        caller = tx.caller_of(instance_id)
        if caller is None:
            return
        waiting = tokens.get(tx.conn, caller[1])
        if waiting is None or waiting.state != TokenState.WAITING:
            return
        if waiting.wait_kind != WaitKind.CALLED:
            return
        yield caller[0], waiting
        instance_id = caller[0]


def caller_catches(tx: Tx, instance_id: UUID, code: str) -> bool:
    """Whether an error of ``code`` leaving ``instance_id`` is caught by its caller's call
    activity, a scope around it, or further up the chain of calls (reads only)."""
    if tx.graph_for is None:
        return False
    return any(
        caught_anywhere(tx.graph_for(caller), waiting.node_id, code)
        for caller, waiting in waiting_callers(tx, instance_id)
    )


def propagate(tx: Tx, thrower: TokenRow, code: str, message: str) -> bool:
    """End the instance of ``thrower`` with the error, for its caller to catch; False (and
    nothing done) when no caller catches ``code``."""
    if not caller_catches(tx, thrower.instance_id, code):
        return False
    tx.lock_instance(thrower.instance_id)
    tx.history.engine(
        instance_id=thrower.instance_id,
        at=tx.now,
        type=EngineEvent.BPMN_ERROR_PROPAGATED,
        node_id=thrower.node_id,
        token_id=thrower.id,
        actor=tx.actor,
        data={"code": code, "message": message},
    )
    reason = f"error {code!r} thrown at {thrower.node_id!r} went up to the caller"
    # The thrower's path ends with the throw (its task, if any, is already DONE with it).
    cancel_timers(tx, thrower, reason)
    move(tx, tx.current(thrower), state=TokenState.COMPLETED, event=TokenEvent.ERROR_THROWN)
    for row in tx.tokens_of(thrower.instance_id):
        if row.state in LIVE_TOKEN and row.id != thrower.id:
            cancel_token(tx, tx.current(row), reason)
    set_instance_state(tx, thrower.instance_id, InstanceState.CANCELLED)
    return True


def propagated_error(tx: Tx, instance_id: UUID) -> tuple[str, str, str] | None:
    """The error a cancelled called instance sent up (code, message, node it was thrown at),
    if that is how it ended."""
    found = history.last_engine_event(tx.conn, instance_id, EngineEvent.BPMN_ERROR_PROPAGATED)
    if found is None:
        return None
    node_id, data = found
    if not data:
        return None
    return str(data.get("code")), str(data.get("message") or ""), str(node_id)
