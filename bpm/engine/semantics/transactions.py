"""Transaction subprocesses: what a cancel end event does (BPMN, as Camunda 7 runs it).

A transaction is a subprocess (``Node.transaction``); only its cancel end event differs. When
a token reaches it, the transaction's other work is cancelled, then everything completed
inside the transaction that declares a compensation is compensated, latest success first,
with the saga machinery of a thrown compensation: the cancel end event's token is the anchor
(WAITING for COMPENSATING, so the event stays active while handlers run or wait), and the
transaction's token is the scope whose records it takes (nested subprocesses included, as
for any thrown compensation). When the last compensation is done, the transaction's cancel
boundary event interrupts it and its token takes the boundary's path.

A hazard (an error caught by an error boundary on the transaction, or one nobody catches)
never comes here: it leaves without compensating, as BPMN says, and a transaction that
completes keeps its records for an outer compensation like any subprocess.
"""

from __future__ import annotations

from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.definitions.transactions import cancel_boundary_of
from bpm.engine.core.tx import Conflict, Next, Tx
from bpm.engine.semantics import boundary_events, multi_instance, sagas, writes
from bpm.engine.semantics.cancelling import cancel_inside
from bpm.engine.semantics.moves import move
from bpm.engine.semantics.tree import Tree, waits_for_children
from bpm.states import EngineEvent, RecordState, TokenEvent, TokenMode, TokenState, WaitKind
from bpm.store import compensation
from bpm.store.rows import TokenRow


def cancel_transaction(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """``tok`` reached cancel end event ``node``: cancel the transaction's other work in this
    transaction (with its history row), then compensate what it completed; with nothing to
    compensate, leave by the cancel boundary at once."""
    assert node.scope is not None  # deploy refuses a cancel end event outside a transaction
    tree = Tree.read(tx, tok.instance_id)
    host = tree.host_of(tok, node.scope)
    if host is None:
        raise Conflict(f"transaction {node.scope!r} above {tok.id} moved on")
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.TRANSACTION_CANCELLED,
        node_id=node.id,
        token_id=tok.id,
        actor=tx.actor,
        data={"transaction": node.scope},
    )
    # The path that holds the cancel end event's token (a fork's scope token above it) stays:
    # the token waits there while the compensation runs, and the boundary ends it all.
    keep = {tok.id} | {row.id for row in tree.inside(host) if tree.descends(tok, row.id)}
    others = [r for r in tree.inside(host) if r.id not in keep and r.mode == TokenMode.FORWARD]
    reason = f"cancel end event {node.id!r} cancelled transaction {node.scope!r}"
    _cut_unfinished_subprocesses(tx, g, tree, others, reason)
    cancel_inside(tx, host, others, reason)
    thrown = sagas.throw(tx, g, tx.current(tok), node)
    return leave_by_cancel_boundary(tx, g, thrown.anchor) if thrown is not None else None


def _cut_unfinished_subprocesses(
    tx: Tx, g: ProcessGraph, tree: Tree, cancelled: list[TokenRow], reason: str
) -> None:
    """Only subprocesses that completed are compensated (BPMN; Camunda 7): the records made
    in the running visit of a nested subprocess the cancel cuts off are CANCELLED, as a
    subprocess's body that never finished has nothing to hand over to be undone."""
    roots = [
        visit
        for row in cancelled
        if row.wait_kind == WaitKind.CHILDREN and _runs_a_body(g.node(row.node_id), row)
        if (visit := tree.latest_visit(row, row.node_id)) is not None
    ]
    if not roots:
        return
    pending = [
        (rec, tree.get(rec.token_id))
        for rec in compensation.of_instance(tx.conn, cancelled[0].instance_id)
        if rec.status == RecordState.PENDING
    ]
    for rec, owner in pending:
        if owner is not None and any(owner.id == r or tree.descends(owner, r) for r in roots):
            writes.cancel_records(tx, owner, [rec.id], reason)


def _runs_a_body(node: Node, row: TokenRow) -> bool:
    """A subprocess's token running a visit of its body: a plain one, or an iteration of a
    multi-instance one (not the body, whose iterations answer for themselves)."""
    return node.type is NodeType.SUBPROCESS and (
        node.multi_instance is None or multi_instance.is_iteration(row)
    )


def leave_by_cancel_boundary(tx: Tx, g: ProcessGraph, anchor: TokenRow) -> Next:
    """The cancel end event's compensation is done: the anchor is cancelled, the cancel
    boundary interrupts the transaction (what is left inside is cancelled, a failed
    compensation's incident resolved with it; its record stays FAILED) and its token takes
    the boundary's path."""
    scope = g.node(anchor.node_id).scope
    assert scope is not None
    host = Tree.read(tx, anchor.instance_id).host_of(anchor, scope)
    if host is None or not waits_for_children(host):
        raise Conflict(f"transaction {scope!r} moved on during its cancellation")
    boundary = cancel_boundary_of(g.nodes, g.boundaries, scope)
    assert boundary is not None  # deploy refuses a cancel end event without one
    # The anchor ends first, by itself: it may be the token whose task completed in this very
    # transaction (nothing was left to compensate), a task the interruption must not cancel.
    move(
        tx,
        tx.current(anchor),
        state=TokenState.CANCELLED,
        event=TokenEvent.CANCELLED,
        data={"reason": f"transaction {scope!r} left by its cancel boundary {boundary.id!r}"},
    )
    return boundary_events.interrupt(
        tx, g, host, boundary, TokenEvent.TRANSACTION_CANCELLED, "the cancel boundary event"
    )
