"""Multi-instance activities (BPMN's ``multiInstanceLoopCharacteristics``, Camunda 7's
semantics).

The token that arrives at a multi-instance activity is its **body**: it becomes WAITING for
its children and never runs the activity itself. Each **iteration** is a child token at the
same node whose ``scope_id`` is the node's own id (no other token has ``scope_id ==
node_id``: a node is never inside itself), so every module that asks the execution tree
sees the body as the scope around its iterations: variables (``scopes._chain``), errors
thrown inside (``bpmn_errors``), interruptions (``Node.is_scope``). An iteration runs the
activity's own semantics (its inputs, listeners, task or subprocess or call, outputs); when
it would leave by the outgoing flows it ends instead (``iteration_done``), and the body
decides, under its own row lock (its instance's first), so any number of iterations ending
at the same instant on several workers count once each and leave the activity once.

Camunda's variables: ``nrOfInstances``, ``nrOfActiveInstances`` and
``nrOfCompletedInstances`` are local variables of the body; ``loopCounter`` and the element
variable are local to each iteration. No table of its own: tokens and local variables carry
it all, so history rebuilds it (``bpm replay --check``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from bpm.definitions.model import MultiInstance, Node, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, Stale, Tx
from bpm.engine.semantics import scopes, waits
from bpm.engine.semantics.cancelling import cancel_inside
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.moves import create, move, new_token
from bpm.engine.semantics.tree import Tree
from bpm.errors import ExpressionEvalError
from bpm.expressions import Expression, evaluate_condition
from bpm.states import LinkType, TokenEvent, TokenState, WaitKind
from bpm.store.rows import TokenRow

#: The most iterations one activity may have (``BPM_MULTI_INSTANCE_MAX``): a runaway
#: collection or cardinality is an incident naming the activity, not a million tokens.
DEFAULT_MAX = 1000
INSTANCES = "nrOfInstances"
ACTIVE = "nrOfActiveInstances"
COMPLETED = "nrOfCompletedInstances"
LOOP_COUNTER = "loopCounter"
#: The incident kind of a multi-instance activity that cannot run (bad input, over the cap).
INCIDENT = "multi-instance"


@dataclass(frozen=True)
class Leaving:
    """The body is done: it leaves the activity by its outgoing flows (``nodes`` does that,
    as for any activity, but without the listeners and outputs that belong to iterations)."""

    body: TokenRow


def max_iterations() -> int:
    raw = os.environ.get("BPM_MULTI_INSTANCE_MAX", "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_MAX


def is_iteration(tok: TokenRow) -> bool:
    """Whether ``tok`` is an iteration of the multi-instance activity it is at."""
    return tok.scope_id == tok.node_id


def is_body(g: ProcessGraph, tok: TokenRow) -> bool:
    return g.node(tok.node_id).multi_instance is not None and not is_iteration(tok)


def enter(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next | Leaving:
    """The body arrives: how many iterations (a problem is an incident), its counters, the
    iterations (all of them, or the first when sequential), its boundary timers."""
    mi = node.multi_instance
    assert mi is not None
    view = scopes.view(tx, g, tok)
    try:
        items = _items(mi, view, node)
    except _Refused as exc:
        fail_token(tx, tok, kind=INCIDENT, message=str(exc))
        return None
    count = len(items)
    if count > max_iterations():
        message = (
            f"multi-instance activity {node.id!r} would run {count} iterations; the limit is "
            f"{max_iterations()} (BPM_MULTI_INSTANCE_MAX)"
        )
        fail_token(tx, tok, kind=INCIDENT, message=message)
        return None
    started = 0 if count == 0 else 1 if mi.sequential else count
    counters: dict[str, Any] = {INSTANCES: count, ACTIVE: started, COMPLETED: 0}
    if mi.output_collection is not None:
        counters[mi.output_collection] = [None] * count
    scopes.write(tx, g, tok, counters, local=True)
    body = move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.WAITING,
        wait_kind=WaitKind.CHILDREN,
        data={"multi_instance": mi.describe(), "instances": count},
    )
    if count == 0:  # Camunda: no iteration, the activity completes at once
        return _leaving(tx, g, body, mi)
    first = _start(tx, g, body, node, items, range(started))
    if g.timer_boundaries(node.id):
        waits.arm_boundaries(tx, g, body, node)
    return NextToken(first.id, 0, row=first, seen=first)


def iteration_done(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next | Leaving:
    """An iteration finished the activity (its end listeners ran): under the body's lock,
    its outputs, the counters, Zeebe's output element, the completion condition; then the
    iteration ends, and the next one starts (sequential) or the body leaves (all done, or
    the condition held: the iterations still running are cancelled)."""
    mi = node.multi_instance
    assert mi is not None and tok.parent_token_id is not None
    # the body's row, locked (its instance's first): only its id and instance are read
    body = tx.lock_token(replace(tok, id=tok.parent_token_id))
    if body is None or body.state != TokenState.WAITING or body.wait_kind != WaitKind.CHILDREN:
        raise Stale(f"multi-instance body of token {tok.id} is no longer waiting")
    if node.outputs:  # evaluated under the lock: an output appending to a list sees the last
        problem = scopes.complete(tx, g, tok, node)
        if problem is not None:
            fail_token(tx, tx.current(tok), kind="mapping", message=problem)
            return None
    own = scopes.own_locals(tx, body)
    counters = {
        INSTANCES: own.get(INSTANCES, 0),
        ACTIVE: max(int(own.get(ACTIVE, 1)) - 1, 0),
        COMPLETED: int(own.get(COMPLETED, 0)) + 1,
    }
    seen: dict[str, Any] = {}
    if mi.completion_condition is not None or mi.output_element is not None:
        seen = {**scopes.view(tx, g, tok), **counters, **_zeebe_names(counters)}
    try:
        if mi.output_collection is not None and mi.output_element is not None:
            collected = list(own.get(mi.output_collection) or [])
            index = int(seen.get(LOOP_COUNTER, 0))
            if 0 <= index < len(collected):
                collected[index] = mi.output_element.evaluate(seen)
            counters[mi.output_collection] = collected
        condition = mi.completion_condition
        done = condition is not None and evaluate_condition(condition, seen)
    except ExpressionEvalError as exc:
        fail_token(tx, tx.current(tok), kind=INCIDENT, message=f"{node.id!r}: {exc}")
        return None
    move(tx, tx.current(tok), state=TokenState.COMPLETED, event=TokenEvent.COMPLETED)
    total = int(counters[INSTANCES])
    if done or counters[COMPLETED] >= total:
        counters[ACTIVE] = 0
        scopes.write(tx, g, body, counters, local=True)
        if done:
            reason = f"completion condition of {node.id!r} held"
            cancel_inside(tx, body, Tree.read(tx, body.instance_id).inside(body), reason)
        return _leaving(tx, g, body, mi)
    if mi.sequential:
        counters[ACTIVE] = 1
        scopes.write(tx, g, body, counters, local=True)
        try:
            items = _items(mi, scopes.view(tx, g, body), node) if mi.collection else []
        except _Refused as exc:
            fail_token(tx, tx.current(body), kind=INCIDENT, message=str(exc))
            return None
        index = int(counters[COMPLETED])
        following = _start(tx, g, body, node, items, range(index, index + 1))
        return NextToken(following.id, 0, row=following, seen=following)
    scopes.write(tx, g, body, counters, local=True)
    return None


def _zeebe_names(counters: dict[str, Any]) -> dict[str, Any]:
    """Zeebe's names of the counters, which its completion conditions read."""
    return {
        "numberOfInstances": counters[INSTANCES],
        "numberOfActiveInstances": counters[ACTIVE],
        "numberOfCompletedInstances": counters[COMPLETED],
    }


def decide(body: TokenRow, children: list[TokenRow]) -> Leaving | None:
    """The body's own decision (a path beside it ended, or a scan), from its live
    ``children`` read under its lock: its iterations are counted by the transactions that
    end them, so it only leaves when none is left."""
    live = [c for c in children if is_iteration(c)]
    return None if live else Leaving(body)


def _leaving(tx: Tx, g: ProcessGraph, body: TokenRow, mi: MultiInstance) -> Leaving:
    """Zeebe's output collection goes to the scope around the activity, then the body
    leaves (its own local variables end as it moves)."""
    if mi.output_collection is not None:
        collected = scopes.own_locals(tx, body).get(mi.output_collection, [])
        scopes.write(tx, g, body, {mi.output_collection: collected}, outward=True)
    return Leaving(tx.current(body))


def _start(
    tx: Tx, g: ProcessGraph, body: TokenRow, node: Node, items: list[Any], counters: range
) -> TokenRow:
    """New iterations with their ``loopCounter`` and element; the first is returned (its
    job is the caller's), the others are sent their own."""
    mi = node.multi_instance
    assert mi is not None
    rows = [
        new_token(
            tx,
            instance_id=body.instance_id,
            node_id=node.id,
            parent=body.id,
            scope_id=node.id,
            concurrent=False,
            via_flow=None,
        )
        for _ in counters
    ]
    create(tx, rows, [(body.id, row.id, LinkType.FORK) for row in rows])
    fresh: dict[tuple[UUID, str], dict[str, Any]] = {}
    for row, counter in zip(rows, counters, strict=True):
        values: dict[str, Any] = {LOOP_COUNTER: counter}
        if mi.element_variable is not None:
            values[mi.element_variable] = items[counter] if counter < len(items) else None
        fresh[(row.id, node.id)] = values
    scopes.enter_scopes(tx, body.instance_id, fresh)
    for row in rows[1:]:
        tx.branch_later(row)
    return rows[0]


class _Refused(Exception):
    """The activity's collection or cardinality cannot give iterations."""


def _items(mi: MultiInstance, view: dict[str, Any], node: Node) -> list[Any]:
    """The elements to run over (a cardinality gives that many ``None``)."""
    label = f"multi-instance activity {node.id!r}"
    if mi.collection is not None:
        if isinstance(mi.collection, Expression):
            value = _evaluate(mi.collection, view, label)
            shown = f"collection {mi.collection.source!r}"
        else:
            if mi.collection not in view:
                raise _Refused(f"{label}: collection variable {mi.collection!r} is not set")
            value = view[mi.collection]
            shown = f"collection variable {mi.collection!r}"
        if not isinstance(value, list):
            kind = "null" if value is None else type(value).__name__
            raise _Refused(f"{label}: {shown} is {kind} {value!r:.60}, not a list")
        return list(value)
    count = mi.cardinality
    if isinstance(count, Expression):
        count = _evaluate(count, view, label)
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if isinstance(count, str) and count.strip().isdigit():
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _Refused(f"{label}: loop cardinality is {count!r:.60}, not a whole number >= 0")
    return [None] * count


def _evaluate(expr: Expression, view: dict[str, Any], label: str) -> Any:
    try:
        return expr.evaluate(view)
    except ExpressionEvalError as exc:
        raise _Refused(f"{label}: {exc}") from None
