"""A saga across a call activity: the caller's saga undoes what the called instance did.

When a called instance completes with successes still to undo (PENDING records), and its
call activity declares no compensation of its own, the caller records the call: a record
that stands for the called instance's records (``called_instance_id``). When the caller's
saga reaches that record, its compensation token starts a saga in the called instance,
which runs again (RUNNING) only to carry out its own records, latest success first, with
its own graph and variables, then completes again; the caller's token then goes on to the
record before it. A call activity that declares a compensation undoes the whole call with
it instead, as a subprocess's compensation covers its body.

A thrown compensation event does not reach into a called instance, as in Camunda 7: only a
saga does, since a saga is bpm's promise that every success of a failed run is undone.

Locks go down the chain only: the caller's transaction changes the called instance (a
caller is locked before what it called); the called instance's saga, when it ends, only
nudges the caller's token, whose own transaction then takes the record.
"""

from __future__ import annotations

from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Next, Stale, Tx
from bpm.engine.semantics import sagas, writes
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.instance_state import set_instance_state
from bpm.engine.semantics.moves import create, move, new_token
from bpm.states import (
    ENDED_INSTANCE,
    EngineEvent,
    InstanceState,
    RecordState,
    TokenEvent,
    TokenMode,
    TokenState,
    WaitKind,
)
from bpm.store import compensation, instances, tokens
from bpm.store.rows import InstanceRow, TokenRow

#: The incident kind when a called instance cannot be compensated.
INCIDENT = "call-compensation"


def record_call(tx: Tx, tok: TokenRow, node: Node, child: InstanceRow) -> None:
    """The call returned: if the called instance left successes to undo and the call
    activity does not undo the call itself, record the call for the caller's saga."""
    if node.compensation is not None or not compensation.has_pending(tx.conn, child.id):
        return
    writes.record_call(tx, tok, node, child.id)


def start(tx: Tx, tok: TokenRow) -> Next:
    """The caller's compensation token reached a recorded call: start a saga in the called
    instance and wait for it (WAITING for CALLED)."""
    assert tok.record_id is not None
    rec = compensation.get(tx.conn, tok.record_id)
    child_id = rec.called_instance_id if rec is not None else None
    child = instances.get(tx.conn, child_id) if child_id is not None else None
    if child is None or tx.graph_for is None:
        fail_token(
            tx,
            tok,
            kind=INCIDENT,
            message=f"call activity {tok.node_id!r}: the called instance {child_id} is no "
            "longer kept (history retention), so what it did cannot be undone",
        )
        return None
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.WAITING,
        wait_kind=WaitKind.CALLED,
        data={"compensating": str(child.id)},
    )
    set_instance_state(tx, child.id, InstanceState.RUNNING, only_from=(InstanceState.COMPLETED,))
    child_graph = tx.graph_for(child.id)
    anchor = new_token(
        tx,
        instance_id=child.id,
        node_id=child_graph.start_of(None).id,
        parent=None,
        scope_id=None,
        concurrent=False,
        via_flow=None,
        state=TokenState.WAITING,
        mode=TokenMode.COMPENSATION,
        wait_kind=WaitKind.COMPENSATING,
    )
    create(tx, [anchor], [])
    tx.history.engine(
        instance_id=child.id,
        at=tx.now,
        type=EngineEvent.SAGA_STARTED,
        node_id=anchor.node_id,
        token_id=anchor.id,
        actor=tx.actor,
        data={"scope": "global", "reason": f"compensated by its caller {tok.instance_id}"},
    )
    done = sagas.next_compensation(tx, child_graph, anchor)
    if done is not None:  # nothing left to undo there after all
        finish(tx, done.anchor)
    return None


def for_caller(tx: Tx, anchor: TokenRow) -> bool:
    """Whether ``anchor`` is the saga a caller started in this (called) instance."""
    return anchor.parent_token_id is None and (
        compensation.standing_for(tx.conn, anchor.instance_id) is not None
    )


def finish(tx: Tx, anchor: TokenRow) -> Next:
    """The called instance's saga is over: it completes again, and the caller's
    compensation token is nudged to take its record."""
    sagas.complete_anchor(tx, anchor)
    set_instance_state(tx, anchor.instance_id, InstanceState.COMPLETED)
    rec = compensation.standing_for(tx.conn, anchor.instance_id)
    if rec is None:
        return None
    waiting = tokens.compensating(tx.conn, rec.instance_id, rec.id)
    if waiting is not None:
        tx.advance_later(waiting.id, waiting.version)
    return None


def decide(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """The caller's compensation token, nudged: done once the called instance ended again;
    a compensation that failed there fails this one too (its incident names it)."""
    locked = tx.lock_token(tok)
    if locked is None or locked.version != tok.version or locked.state != TokenState.WAITING:
        raise Stale(f"token {tok.id} moved on before the called instance was compensated")
    assert locked.record_id is not None
    rec = compensation.get(tx.conn, locked.record_id)
    child = (
        instances.get(tx.conn, rec.called_instance_id)
        if rec is not None and rec.called_instance_id is not None
        else None
    )
    if child is not None and child.state not in ENDED_INSTANCE:
        return None
    failed = (
        [r for r in compensation.of_instance(tx.conn, child.id) if r.status == RecordState.FAILED]
        if child is not None
        else []
    )
    if failed:
        fail_token(
            tx,
            locked,
            kind=INCIDENT,
            message=f"call activity {locked.node_id!r}: {len(failed)} compensation(s) failed "
            f"in the called instance {child.id if child else None}",
        )
        return None
    return sagas.compensated(tx, locked)
