"""Gateways: a fork, an exclusive choice, and arriving at a join (which the parent then
decides, in ``joins``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import GATEWAYS, Flow, Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, Tx
from bpm.engine.semantics import scopes
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.moves import create, move, new_token, take
from bpm.engine.semantics.tree import has_live_children, waits_for_children
from bpm.errors import ExpressionEvalError, MissingVariable
from bpm.expressions import evaluate_condition
from bpm.states import LinkType, TokenEvent, TokenState, WaitKind
from bpm.store.rows import TokenRow


def fork_or_leave(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    flows = g.outgoing(node.id)
    if len(flows) == 1:
        return take(tx, tok, flows[0])
    return fork(tx, tok, flows)


def leave_by_conditions(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """Leave an activity or event with several outgoing flows, or a conditional one: every
    flow without a condition or whose condition holds is taken (several fork, as a parallel
    gateway would); the default flow when none is; an incident when there is no default."""
    values = scopes.view(tx, g, tok)
    chosen: list[Flow] = []
    for flow in g.outgoing(node.id):
        if flow.id == node.default_flow:
            continue
        holds = _holds(tx, tok, node, flow, values)
        if holds is None:
            return None
        if holds:
            chosen.append(flow)
    if not chosen and node.default_flow is not None:
        chosen = [g.flows[node.default_flow]]
    if not chosen:
        fail_token(
            tx,
            tok,
            kind="no-path",
            message=f"{node.type.value} {node.id!r}: no outgoing sequence flow can be taken: no "
            f"flow's condition is true and there is no default flow",
        )
        return None
    if len(chosen) == 1:
        return take(tx, tok, chosen[0])
    return fork(tx, tok, chosen)


def fork(tx: Tx, tok: TokenRow, flows: list[Flow]) -> Next:
    """One concurrent token per flow, under the scope token."""
    if tok.concurrent:
        # A branch that forks again ends and hands over to new siblings under the same scope
        # token, so every join counts the tokens of one scope (Camunda 7's execution tree).
        move(
            tx,
            tok,
            state=TokenState.COMPLETED,
            event=TokenEvent.FORKED,
            data={"into": [f.id for f in flows]},
        )
        parent = tok.parent_token_id
    else:
        # It leaves its node (its local variables end); ``via_flow`` None marks a forked
        # scope token, which a subprocess's own token, still running its body, never is.
        move(
            tx,
            tok,
            state=TokenState.WAITING,
            event=TokenEvent.FORKED,
            node_id=tok.node_id,
            via_flow=None,
            wait_kind=WaitKind.CHILDREN,
            data={"into": [f.id for f in flows]},
        )
        parent = tok.id
    children = [
        new_token(
            tx,
            instance_id=tok.instance_id,
            node_id=f.target,
            parent=parent,
            scope_id=tok.scope_id,
            concurrent=True,
            via_flow=f.id,
        )
        for f in flows
    ]
    create(tx, children, [(tok.id, c.id, LinkType.FORK) for c in children])
    for child in children[1:]:
        tx.branch_later(child)
    return NextToken(children[0].id, 0, row=children[0], seen=children[0])


def exclusive(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    flows = g.outgoing(node.id)
    values = scopes.view(tx, g, tok)
    for flow in flows:
        if flow.id == node.default_flow:
            continue
        holds = _holds(tx, tok, node, flow, values)
        if holds is None:
            return None
        if holds:
            return take(tx, tok, flow)
    if node.default_flow is not None:
        return take(tx, tok, g.flows[node.default_flow])
    fail_token(
        tx,
        tok,
        kind="no-path",
        message=f"gateway {node.id!r}: no condition is true and there is no default flow",
    )
    return None


def _holds(tx: Tx, tok: TokenRow, node: Node, flow: Flow, values: Mapping[str, Any]) -> bool | None:
    """Whether ``flow`` may be taken (no condition, or a true one); None when its condition
    cannot be evaluated, after failing the token with an incident that says why."""
    if flow.condition is None:
        return True
    where = "gateway" if node.type in GATEWAYS else node.type.value
    try:
        return evaluate_condition(flow.condition, values)
    except MissingVariable as exc:
        message = (
            f"{where} {node.id!r}: condition of flow {flow.id!r} reads variable "
            f"{exc.name!r}, which the instance does not have"
        )
        fail_token(tx, tok, kind="condition", message=message, details=str(exc))
    except ExpressionEvalError as exc:
        message = f"{where} {node.id!r}: condition of flow {flow.id!r} failed: {exc}"
        fail_token(tx, tok, kind="condition", message=message)
    return None


def park_at_join(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """Wait at the join, then let the parent decide."""
    if not tok.concurrent and g.spawns_tokens and has_live_children(tx, tok):
        return join_as_scope(tx, g, tok)
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.ARRIVED_AT_JOIN,
        wait_kind=WaitKind.JOIN,
        waits_for=_waits_for(g.node(tok.node_id)),
        data={"via": tok.via_flow},
    )
    if tok.parent_token_id is None:
        return None  # a lone token at a join waits forever, as in BPMN
    join = g.node(tok.node_id)
    if join.type is NodeType.PARALLEL:
        return _hand_over_if_last(tx, g, tok, join)
    parent = tx.token(tok.parent_token_id)
    if parent is None or parent.state != TokenState.WAITING:
        return None
    return NextToken(parent.id, parent.version, seen=parent)


def _hand_over_if_last(tx: Tx, g: ProcessGraph, tok: TokenRow, join: Node) -> Next:
    """A branch at a parallel join hands over to its scope only when it completes the join:
    under the scope token's lock (its instance's first) it reads the siblings parked there,
    and a join every incoming flow has reached is the scope's to fire, in its own
    transaction. Two branches arriving together take turns at the lock and the second
    reads the first's arrival, so the last one always hands over; a hand-over lost anyway
    (the worker died after the commit) is found by the waiting-parents scan."""
    assert tok.parent_token_id is not None
    parent, children = tx.lock_token_with_children(tok.parent_token_id, tok.instance_id)
    if parent is None or parent.state != TokenState.WAITING:
        return None
    if parent.wait_kind != WaitKind.CHILDREN or g.node(parent.node_id).multi_instance is not None:
        return NextToken(parent.id, parent.version, seen=parent)  # the scope decides it all
    parked = arrivals(children).get(join.id, [])
    if parallel_pick(join, parked) is None:
        return None  # a sibling still on its way hands over when it arrives
    return NextToken(parent.id, parent.version, seen=parent)


def arrivals(children: list[TokenRow]) -> dict[str, list[TokenRow]]:
    """The children parked at each join, earliest first."""
    out: dict[str, list[TokenRow]] = {}
    for child in sorted(children, key=lambda c: (c.updated_at, str(c.id))):
        if child.state == TokenState.WAITING and child.wait_kind == WaitKind.JOIN:
            out.setdefault(child.node_id, []).append(child)
    return out


def parallel_pick(join: Node, arrived: list[TokenRow]) -> list[TokenRow] | None:
    """What a parallel join consumes: the earliest token from each incoming flow, or None
    while a flow has none yet."""
    by_flow: dict[str, TokenRow] = {}
    for child in arrived:
        if child.via_flow in join.incoming and child.via_flow not in by_flow:
            by_flow[child.via_flow] = child
    if len(by_flow) < len(join.incoming):
        return None
    return [by_flow[f] for f in join.incoming]


def nudge_scope(tx: Tx, tok: TokenRow) -> None:
    """``tok`` took a flow from which an inclusive join it could reach is out of reach:
    the scope it runs in decides again once this commits (a decision with nothing to do is
    harmless)."""
    parent = tx.token(tok.parent_token_id) if tok.parent_token_id is not None else None
    if parent is not None and waits_for_children(parent):
        tx.advance_later(parent.id, parent.version)


def join_as_scope(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """A scope's own token reaches a join while tokens that a non-interrupting boundary spawned
    under it are still running: like Camunda's execution tree, it becomes the scope (WAITING
    for its children) and a concurrent stand-in arrives at the join in its place, so the join
    counts it together with the spawned tokens."""
    scope = move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.WAITING,
        wait_kind=WaitKind.CHILDREN,
        data={"join": tok.node_id, "as": "scope"},
    )
    stand_in = new_token(
        tx,
        instance_id=tok.instance_id,
        node_id=tok.node_id,
        parent=tok.id,
        scope_id=tok.scope_id,
        concurrent=True,
        via_flow=tok.via_flow,
    )
    create(tx, [stand_in], [(tok.id, stand_in.id, LinkType.FORK)])
    move(
        tx,
        stand_in,
        state=TokenState.WAITING,
        event=TokenEvent.ARRIVED_AT_JOIN,
        wait_kind=WaitKind.JOIN,
        waits_for=_waits_for(g.node(tok.node_id)),
        data={"via": stand_in.via_flow},
    )
    return NextToken(scope.id, scope.version)


def _waits_for(join: Node) -> int | None:
    """How many incoming flows need a parked token before the join may fire: all of a
    parallel join's. None for an inclusive join, which fires once no live token can reach
    it; the waiting-parents scan then re-checks it every grace period, so a token that went
    elsewhere without nudging anyone does not leave it waiting."""
    return None if join.type is NodeType.INCLUSIVE else len(join.incoming)
