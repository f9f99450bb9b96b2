"""Saga compensation.

Every activity that succeeds and declares a compensation gets a record, numbered in success
order, in the transaction that records the success. When a forward token fails for good under
a ``local`` or ``global`` saga scope, the saga starts: the other forward tokens of the scope are
cancelled, and an anchor token (mode COMPENSATION, WAITING for COMPENSATING) runs the pending
records of the scope one at a time, latest success first. Each record is carried out by its own
COMPENSATION token, which creates an ordinary task (handler, topic or user task), so retries,
lock expiry and external workers work as for forward tasks. When the last one is done the saga
completes: a global saga terminates the instance; a local one ends its subprocess and the
failure goes on outward. Compensation thrown on purpose (a compensationThrow event, or an end
event with ``compensate``) uses the same anchor mechanism with the throwing token as the anchor,
and then moves on instead of terminating.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from bpm.definitions.model import Node, ProcessGraph
from bpm.dispatch import RUN_COMPENSATION, Job
from bpm.engine.core.tx import Next, NextToken, Stale, Tx
from bpm.engine.semantics import records, writes
from bpm.engine.semantics.cancelling import cancel_token
from bpm.engine.semantics.moves import create, move, new_token, spawn_beside
from bpm.engine.semantics.tree import Tree
from bpm.states import (
    LIVE_TOKEN,
    EngineEvent,
    LinkType,
    TokenEvent,
    TokenMode,
    TokenState,
    WaitKind,
)
from bpm.store.rows import TokenRow

COMPENSATING = WaitKind.COMPENSATING
#: The error code a local saga throws at its subprocess when it is done: an error boundary on
#: the subprocess catching it (or "*") takes the token; otherwise the failure goes outward.
SAGA_CODE = "SAGA_COMPENSATED"


# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Finished:
    """The anchor has nothing left to compensate: its caller ends the saga (``failures``)
    or lets the throwing token go on (``nodes``)."""

    anchor: TokenRow


# --- starting a saga ---------------------------------------------------------------------


def start_if_declared(tx: Tx, g: ProcessGraph, failed: TokenRow, reason: str) -> Finished | bool:
    """A forward token failed for good: start the saga its scope declares, if any. False
    when none is declared; ``Finished`` when there was nothing to undo."""
    policy, scope = g.saga_scope(failed.scope_id)
    if policy == "none":
        return False
    tree = Tree.read(tx, failed.instance_id)
    host = None if policy == "global" else tree.host_of(failed, scope) if scope else None
    if policy == "local" and host is None:
        return False
    tx.history.engine(
        instance_id=failed.instance_id,
        at=tx.now,
        type=EngineEvent.SAGA_STARTED,
        node_id=failed.node_id,
        token_id=failed.id,
        actor=tx.actor,
        data={"scope": "global" if host is None else scope, "reason": reason},
    )
    for row in tree.covered_by_saga(host):
        if row.id != failed.id and row.mode == TokenMode.FORWARD and row.state in LIVE_TOKEN:
            cancel_token(tx, row, reason=f"saga after {failed.node_id!r} failed")
    anchor = new_token(
        tx,
        instance_id=failed.instance_id,
        node_id=failed.node_id,
        parent=host.id if host else None,
        scope_id=scope if host else None,
        concurrent=host is not None,
        via_flow=None,
        state=TokenState.WAITING,
        mode=TokenMode.COMPENSATION,
        wait_kind=COMPENSATING,
    )
    create(tx, [anchor], [(host.id, anchor.id, LinkType.COMPENSATION)] if host else [])
    return next_compensation(tx, g, anchor) or True


# --- thrown compensation -----------------------------------------------------------------


def anchor_beside(tx: Tx, tok: TokenRow) -> TokenRow:
    """A new token at ``tok``'s node to anchor a compensation that ``tok`` does not wait for:
    placed as a non-interrupting boundary's path is (``moves.spawn_beside``)."""
    return spawn_beside(tx, tok, tok.node_id, {"compensation": tok.node_id})


def throw(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Finished | None:
    """compensationThrow / compensating end event: compensate the scope (or one activity),
    wait for it, then go on (a thrown compensation terminates nothing)."""
    anchor = move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.COMPENSATION_THROWN,
        wait_kind=COMPENSATING,
        data={"activity": node.activity},
    )
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.COMPENSATION_THROWN,
        node_id=node.id,
        token_id=tok.id,
        actor=tx.actor,
        data={"activity": node.activity},
    )
    return next_compensation(tx, g, anchor)


# --- the anchor: one compensation at a time, latest success first -------------------------


def decide(tx: Tx, g: ProcessGraph, anchor: TokenRow) -> Finished | None:
    """Nudged when a compensation ended: start the next one, or finish."""
    locked, children = tx.lock_token_with_children(anchor.id, anchor.instance_id)
    if locked is None or locked.version != anchor.version or locked.state != TokenState.WAITING:
        raise Stale(f"token {anchor.id} moved on before its compensation decision")
    if any(c.state in (TokenState.ACTIVE, TokenState.WAITING) for c in children):
        return None  # one at a time: the running compensation nudges again when it ends
    return next_compensation(tx, g, locked)


def next_compensation(tx: Tx, g: ProcessGraph, anchor: TokenRow) -> Finished | None:
    """Start the anchor's next compensation (one at a time), or say it has none left."""
    todo = records.pending_in_scope(tx, g, anchor)
    if not todo:
        return Finished(anchor)
    rec = todo[0]
    comp = new_token(
        tx,
        instance_id=anchor.instance_id,
        node_id=rec.node_id,
        parent=anchor.id,
        scope_id=g.node(rec.node_id).scope,
        concurrent=True,
        via_flow=None,
        mode=TokenMode.COMPENSATION,
        record_id=rec.id,
    )
    create(tx, [comp], [(anchor.id, comp.id, LinkType.COMPENSATION)])
    tx.history.engine(
        instance_id=anchor.instance_id,
        at=tx.now,
        type=EngineEvent.COMPENSATION_TOKEN_CREATED,
        node_id=rec.node_id,
        token_id=comp.id,
        actor=tx.actor,
        data={"record_id": str(rec.id), "seq": rec.seq, "handler": rec.handler},
    )
    # Strictly one at a time, on the compensation queue.
    tx.jobs.append(Job(RUN_COMPENSATION, {"token_id": str(comp.id), "expected_version": 0}))
    return None


# --- a compensation token ends -------------------------------------------------------------


def compensated(tx: Tx, tok: TokenRow) -> Next:
    """The compensation handler succeeded: its record is COMPLETED; the anchor goes on."""
    move(tx, tok, state=TokenState.COMPLETED, event=TokenEvent.COMPENSATED)
    writes.complete_record(tx, tok)
    return _nudge_anchor(tx, tok)


def compensation_failed(
    tx: Tx, tok: TokenRow, failed: TokenRow, message: str, details: str | None, task_id: UUID | None
) -> None:
    """A failed compensation is not compensated: incident, record FAILED, the saga goes on."""
    writes.fail_record(tx, tok, message)
    writes.open_incident(
        tx, tok, kind="compensation", message=message, details=details, task_id=task_id
    )
    nxt = _nudge_anchor(tx, failed)
    if isinstance(nxt, NextToken):
        tx.advance_later(nxt.token_id, nxt.version)


def _nudge_anchor(tx: Tx, tok: TokenRow) -> Next:
    if tok.parent_token_id is None:
        return None
    anchor = tx.token(tok.parent_token_id)
    if anchor is None or anchor.state != TokenState.WAITING or anchor.wait_kind != COMPENSATING:
        return None  # e.g. an operator retried it after the saga had finished
    return NextToken(anchor.id, anchor.version)


def complete_anchor(tx: Tx, anchor: TokenRow) -> TokenRow:
    """A saga's anchor is done: every record of its scope was carried out."""
    done = move(tx, anchor, state=TokenState.COMPLETED, event=TokenEvent.SAGA_COMPLETED)
    tx.history.engine(
        instance_id=anchor.instance_id,
        at=tx.now,
        type=EngineEvent.SAGA_COMPLETED,
        node_id=anchor.node_id,
        token_id=anchor.id,
        actor=tx.actor,
        data={"scope": done.scope_id or "global"},
    )
    return done
