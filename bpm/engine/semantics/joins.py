"""Decisions a WAITING parent token takes about its children.

A decision locks the parent row first (``SELECT ... FOR UPDATE``, its instance's row before
it: ``Tx.lock_token``), so decisions for one scope serialise; it then re-reads the children
and acts only on what it finds. Two decisions for one set of arrivals are therefore
harmless: the second finds nothing to consume. A branch arriving at a parallel join asks for a
decision only when, under the same lock, it finds itself the last (``gateways``).
"""

from __future__ import annotations

from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, Stale, Tx
from bpm.engine.semantics import multi_instance
from bpm.engine.semantics.gateways import arrivals, leave_by_conditions, parallel_pick
from bpm.engine.semantics.moves import create, link, move, new_token
from bpm.engine.semantics.nodes import depart, end_token, leave
from bpm.engine.semantics.tree import body_children
from bpm.states import EngineEvent, LinkType, TokenEvent, TokenMode, TokenState, WaitKind
from bpm.store.rows import TokenRow


def decide(tx: Tx, g: ProcessGraph, parent: TokenRow) -> Next:
    locked, children = tx.lock_token_with_children(parent.id, parent.instance_id)
    if locked is None or locked.version != parent.version or locked.state != TokenState.WAITING:
        raise Stale(f"token {parent.id} moved on before its decision")
    if multi_instance.is_body(g, locked):
        return depart(tx, g, multi_instance.decide(locked, children), g.node(locked.node_id))
    for join_id, arrived in arrivals(children).items():
        node = g.node(join_id)
        picked = _pick(g, node, arrived, children)
        if picked is not None:
            return _fire_join(tx, g, locked, node, picked, children)
    node = g.node(locked.node_id)
    # A subprocess's token runs its body until it forks out of the subprocess (``fork``
    # clears its ``via_flow``); then its children are branches, as a gateway's are. An event
    # subprocess's token came by no flow, and never forks out of it.
    in_body = node.is_scope and (
        locked.via_flow is not None
        or node.triggered_by_event
        or multi_instance.is_iteration(locked)
    )
    if in_body:
        children = body_children(children, node.id)
    if children:
        return None  # branches still running: nothing to decide yet
    if in_body:
        tx.history.engine(
            instance_id=locked.instance_id,
            at=tx.now,
            type=EngineEvent.SUBPROCESS_COMPLETED,
            node_id=node.id,
            token_id=locked.id,
            actor=tx.actor,
        )
        return leave(tx, g, locked, node)
    return end_token(tx, locked, g)  # every branch of this scope ended at an end event


def _pick(
    g: ProcessGraph, node: Node, arrived: list[TokenRow], children: list[TokenRow]
) -> list[TokenRow] | None:
    """A parallel join: one token per incoming flow (the earliest), or None while a flow has
    none yet. An inclusive join: every token parked there, once no other live token of the
    scope can still reach it (its node has a path to the join, ``ProcessGraph.can_reach``);
    None while one can."""
    if node.type is NodeType.INCLUSIVE:
        parked = {c.id for c in arrived}
        for child in children:
            if child.id in parked or child.mode != TokenMode.FORWARD:
                continue
            if g.can_reach(node.id, child.node_id):
                return None
        return arrived
    return parallel_pick(node, arrived)


def _fire_join(
    tx: Tx,
    g: ProcessGraph,
    parent: TokenRow,
    node: Node,
    picked: list[TokenRow],
    children: list[TokenRow],
) -> Next:
    for child in picked:
        move(tx, child, state=TokenState.COMPLETED, event=TokenEvent.JOINED, data={"join": node.id})
    consumed = {c.id for c in picked}
    others = [c for c in children if c.id not in consumed]
    flows = g.outgoing(node.id)
    tx.history.engine(
        instance_id=parent.instance_id,
        at=tx.now,
        type=EngineEvent.JOIN_FIRED,
        node_id=node.id,
        token_id=parent.id,
        actor=tx.actor,
        data={
            "consumed": [str(c.id) for c in picked],
            "continues": "parent" if not others else "branch",
        },
    )
    if node.type is NodeType.INCLUSIVE:
        return _leave_inclusive(tx, g, parent, node, picked, bool(others))
    if not others:
        # Block-structured case: the scope token itself moves past the join.
        link(tx, [(c.id, parent.id, LinkType.JOIN) for c in picked])
        if len(flows) == 1:
            moved = move(
                tx,
                parent,
                state=TokenState.ACTIVE,
                event=TokenEvent.MOVED,
                node_id=flows[0].target,
                via_flow=flows[0].id,
                data={"from": node.id, "flow": flows[0].id},
            )
            return NextToken(moved.id, moved.version, moved)
        parent = move(
            tx,
            parent,
            state=TokenState.WAITING,
            event=TokenEvent.FORKED,
            node_id=node.id,
            via_flow=None,
            wait_kind=WaitKind.CHILDREN,
            data={"into": [f.id for f in flows]},
        )
    # A join inside a wider fork (or a join that forks again): new branches continue.
    branches = [
        new_token(
            tx,
            instance_id=parent.instance_id,
            node_id=f.target,
            parent=parent.id,
            scope_id=parent.scope_id,
            concurrent=True,
            via_flow=f.id,
        )
        for f in flows
    ]
    links = [(c.id, b.id, LinkType.JOIN) for c in picked for b in branches] if others else []
    links += [(parent.id, b.id, LinkType.FORK) for b in branches] if not others else []
    create(tx, branches, links)
    for branch in branches[1:]:
        tx.branch_later(branch)
    return NextToken(branches[0].id, 0, row=branches[0], seen=branches[0])


def _leave_inclusive(
    tx: Tx, g: ProcessGraph, parent: TokenRow, node: Node, picked: list[TokenRow], others: bool
) -> Next:
    """Past an inclusive join the outgoing flows are chosen by their conditions (a join that
    also splits): the scope token itself goes on when nothing else runs in the scope, else a
    new branch at the join does."""
    if not others:
        link(tx, [(c.id, parent.id, LinkType.JOIN) for c in picked])
        return leave_by_conditions(tx, g, parent, node)
    branch = new_token(
        tx,
        instance_id=parent.instance_id,
        node_id=node.id,
        parent=parent.id,
        scope_id=parent.scope_id,
        concurrent=True,
        via_flow=None,
    )
    create(tx, [branch], [(c.id, branch.id, LinkType.JOIN) for c in picked])
    return leave_by_conditions(tx, g, branch, node)
