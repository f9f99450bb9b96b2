"""Compensation records: written when an activity that declares a compensation succeeds;
which ones an anchor compensates; and the ones a cancel cuts short.

A record is PENDING until its compensation completes (COMPLETED) or fails (FAILED). A record
whose compensation was under way, or still to come, when its token or saga anchor was
cancelled (a terminate, an interrupting event, an operator's cancel) is CANCELLED: nothing
will undo it any more, and audits can tell it from one that was never needed.
"""

from __future__ import annotations

from bpm.definitions.model import SCOPES, Node, ProcessGraph
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import writes
from bpm.engine.semantics.tree import Tree
from bpm.states import RecordState, TokenMode, TokenState, WaitKind
from bpm.store import compensation
from bpm.store.rows import RecordRow, TokenRow


def record_success(tx: Tx, tok: TokenRow, node: Node) -> None:
    """The activity succeeded: remember how to undo it (only successes, once).

    A subprocess's record names the token that ran this visit of its body, so the records
    made inside that visit are known to be covered by the subprocess's own compensation. A
    multi-instance task's iterations each get a record of their own (as in Camunda 7, each
    is undone apart).
    """
    assert node.compensation is not None
    owner = tok.id
    if _covers(node):
        owner = Tree.read(tx, tok.instance_id).latest_visit(tok, node.id) or tok.id
    writes.record_compensation(tx, tok, node, owner)


def _covers(node: Node) -> bool:
    """Whether the node's record stands for the records made inside it: a subprocess's (a
    multi-instance task is a scope only for its iterations, each recorded apart)."""
    return node.type in SCOPES


def pending_in_scope(tx: Tx, g: ProcessGraph, anchor: TokenRow) -> list[RecordRow]:
    """PENDING records the anchor compensates, latest success first.

    Records made inside a subprocess visit that has its own compensation are left out: as in
    BPMN, the subprocess's handler undoes the whole visit instead.
    """
    every = compensation.of_instance(tx.conn, anchor.instance_id)
    pending = sorted((r for r in every if r.status == RecordState.PENDING), key=lambda r: -r.seq)
    if not pending:
        return []
    covering = {r.token_id for r in every if _covers(g.node(r.node_id))}
    tree = Tree.read(tx, anchor.instance_id)
    if anchor.mode == TokenMode.COMPENSATION:  # a saga: global, or the subprocess of its parent
        host = tree.get(anchor.parent_token_id)
        activity = None
    else:  # thrown: the scope the throwing token is in, optionally one activity
        host = tree.host_of(anchor, anchor.scope_id) if anchor.scope_id else None
        activity = g.node(anchor.node_id).activity
    inside = (
        activity
        if activity is not None
        and g.node(activity).is_scope
        and g.node(activity).compensation is None
        else None
    )
    in_scope = {t.id for t in tree.inside(host)} if host else set()
    out = []
    for rec in pending:
        if rec.called_instance_id is not None and anchor.mode != TokenMode.COMPENSATION:
            continue  # a thrown compensation does not reach into a called instance
        if inside is not None:
            if not tree.ran_inside(tree.get(rec.token_id), inside):
                continue
        elif activity is not None and rec.node_id != activity:
            continue
        owner = tree.get(rec.token_id)
        if host is not None and (owner is None or owner.id not in in_scope):
            continue
        if (
            owner is not None
            and not _covers(g.node(rec.node_id))
            and any(owner.id == root or tree.descends(owner, root) for root in covering)
        ):
            continue
        out.append(rec)
    return out


def cut_short(tx: Tx, tok: TokenRow, reason: str) -> None:
    """``tok`` is being cancelled: a compensation token's record, or every record a saga
    anchor had still to compensate, will not be compensated any more."""
    if tok.mode == TokenMode.COMPENSATION and tok.record_id is not None:
        ids = [tok.record_id]
    elif tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.COMPENSATING:
        if tx.graph_for is None:
            return
        ids = [r.id for r in pending_in_scope(tx, tx.graph_for(tok.instance_id), tok)]
    else:
        return
    writes.cancel_records(tx, tok, ids, reason)
