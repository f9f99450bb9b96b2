"""One step of a token: which decision its state calls for, and going on through the
automatic nodes after it."""

from __future__ import annotations

from bpm.definitions.model import NodeType, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, Stale, Tx
from bpm.engine.semantics import (
    call_returns,
    called_compensation,
    joins,
    multi_instance,
    nodes,
    sagas,
)
from bpm.engine.semantics.failures import end_saga
from bpm.states import TokenMode, TokenState, WaitKind
from bpm.store.rows import TokenRow

#: Nodes one transaction may pass for the same token before it commits.
MAX_HOPS_PER_TX = 20


def advance(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """The token's state says what happens: ACTIVE arrives at its node; a scope WAITING for
    its children decides about them; a call activity's token WAITING for the instance it
    called goes on once that ended; a saga's anchor starts its next compensation."""
    if tok.state == TokenState.ACTIVE:
        return nodes.arrive(tx, g, tok)
    if tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.CHILDREN:
        return joins.decide(tx, g, tok)
    if tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.CALLED:
        return call_returns.decide(tx, g, tok)
    if tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.COMPENSATING:
        done = sagas.decide(tx, g, tok)
        if done is None:
            return None
        if done.anchor.mode == TokenMode.FORWARD:
            return nodes.thrown_compensation_done(tx, g, done.anchor)
        if called_compensation.for_caller(tx, done.anchor):
            return called_compensation.finish(tx, done.anchor)
        return end_saga(tx, g, done.anchor)
    raise Stale(f"token {tok.id} is {tok.state}; nothing to advance")


def carry_through(tx: Tx, g: ProcessGraph, result: Next) -> Next:
    """Keep moving the token this transaction already holds, through automatic nodes.

    Only the same token continues (never another one), so a transaction still advances one
    token; each node passage keeps its own history rows.
    """
    for _ in range(MAX_HOPS_PER_TX):
        if not isinstance(result, NextToken) or result.row is None:
            return result
        if result.row.state != TokenState.ACTIVE:
            return result
        result = nodes.arrive(tx, g, result.row)
    return result


def handler_task_only(g: ProcessGraph, tok: TokenRow) -> str | None:
    """The handler of the service task ``tok`` is ACTIVE at, when arriving there does nothing
    but create its task (no listeners, no input mappings, no boundary events, no
    multi-instance body though an iteration is fine, no decision, no conditional events, no
    inclusive join to nudge): such an arrival cannot fail, and reads nothing of the
    instance's other tokens, so it may share a transaction with theirs. None for any other
    node."""
    node = g.node(tok.node_id)
    flow = g.flows.get(tok.via_flow) if tok.via_flow is not None else None
    plain = (
        node.type is NodeType.SERVICE_TASK
        and node.topic is None
        and node.decision is None
        and (node.multi_instance is None or multi_instance.is_iteration(tok))
        and not node.listeners
        and not node.inputs
        and not g.boundaries.get(node.id)
        and not g.has_conditions
        and tok.mode == TokenMode.FORWARD
        and (flow is None or (not flow.listeners and flow.id not in g.turning_flows))
    )
    return node.handler if plain else None
