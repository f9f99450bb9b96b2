"""Failing a token: its saga, or its incident and the instance FAILED; and how a saga that
a failure started ends."""

from __future__ import annotations

from uuid import UUID

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.tx import Conflict, Next, NextToken, Tx
from bpm.engine.semantics import sagas, writes
from bpm.engine.semantics.bpmn_errors import catch_at_activity
from bpm.engine.semantics.cancelling import cancel_timers, resolve_incidents
from bpm.engine.semantics.instance_state import set_instance_state
from bpm.engine.semantics.moves import move
from bpm.engine.semantics.tree import Tree
from bpm.states import EngineEvent, InstanceState, TokenEvent, TokenMode, TokenState
from bpm.store.rows import TokenRow


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
    if tx.graph_for is not None:
        g = tx.graph_for(tok.instance_id)
        started = sagas.start_if_declared(tx, g, failed, message)
        if isinstance(started, sagas.Finished):  # nothing to undo: the saga is over already
            nxt = end_saga(tx, g, started.anchor)
            if isinstance(nxt, NextToken):  # its host goes on
                tx.advance_later(nxt.token_id, nxt.version)
        if started:
            return failed
    writes.open_incident(tx, tok, kind=kind, message=message, details=details, task_id=task_id)
    set_instance_state(
        tx, tok.instance_id, InstanceState.FAILED, only_from=(InstanceState.RUNNING,)
    )
    return failed


def end_saga(tx: Tx, g: ProcessGraph, anchor: TokenRow) -> Next:
    """Every record of a saga a failure started was carried out: a global saga terminates
    the instance; a local one ends its subprocess, and the failure goes on outward."""
    sagas.complete_anchor(tx, anchor)
    if anchor.parent_token_id is None:
        set_instance_state(tx, anchor.instance_id, InstanceState.TERMINATED)
        return None
    return _leave_subprocess(tx, g, tx.token(anchor.parent_token_id))


def _leave_subprocess(tx: Tx, g: ProcessGraph, host: TokenRow | None) -> Next:
    """A local saga is over: its subprocess ends, and the failure goes outward."""
    if host is None or host.state != TokenState.WAITING:
        raise Conflict("the subprocess of a local saga moved on during the saga")
    for row in Tree.read(tx, host.instance_id).inside(host):
        if row.state == TokenState.FAILED and row.mode == TokenMode.FORWARD:
            # the failure that started the saga, at any depth in the subprocess (not one on
            # a path outside it): handled by the saga
            move(
                tx,
                row,
                state=TokenState.CANCELLED,
                event=TokenEvent.CANCELLED,
                data={"reason": "compensated by its local saga"},
            )
            resolve_incidents(tx, row.id, "compensated by its local saga")
    caught = catch_at_activity(tx, g, host, sagas.SAGA_CODE, "compensated by a local saga")
    if caught is not None:
        return caught
    fail_token(
        tx,
        host,
        kind="saga",
        message=f"subprocess {host.node_id!r} was compensated after a failure inside it",
    )
    return None
