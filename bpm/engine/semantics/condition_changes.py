"""Conditional events evaluated again when a transaction changed an instance's variables.

The one hook: ``settle`` runs in every engine transaction just before it flushes
(``EngineCore.transaction``), so every writer of variables is covered without a call of its
own: a handler's result, a task's completion, output mappings, a message's variables, the
variable API, and local variables. It looks only at instances whose definition has
conditional events (``ProcessGraph.has_conditions``, cached per instance in the ``Tx``); for
the others it costs a look at that flag for each instance the transaction changed variables
of, and no statement.

The changes are read from the transaction's own history rows (``VariablesChanged``,
``VariablesDeleted``, ``LocalVariablesSet``), so nothing is tracked on the way. Each
subscription of the instance's live tokens (conditional catch events waiting, conditional
boundary events on activities at work, conditional events after an event-based gateway,
conditional starts of the event subprocesses of running scopes) whose ``variableName`` and
``variableEvents`` let one of the changes through is evaluated over the variables as the
transaction leaves them; when true it fires in this transaction, with its history. Every
firing moves a token under its version (the catch or gateway token, the activity's token,
the scope's host), so two transactions that both see a condition come true cannot both fire
it: the second's flush conflicts, it is retried, and then finds the subscription gone.

A simplification against Camunda 7 (docs/bpmn.md): every change of the instance counts,
whichever scope it was made in.
"""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

from bpm.definitions.conditions import VariableEvent
from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import conditions, event_subprocesses, writes
from bpm.engine.semantics.event_gateway_wins import condition_won
from bpm.engine.semantics.event_gateways import events_after
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.message_boundaries import at_work
from bpm.engine.semantics.moves import move
from bpm.engine.semantics.nodes import leave
from bpm.engine.semantics.tree import Tree
from bpm.states import LIVE_TOKEN, EngineEvent, TokenEvent, TokenState, WaitKind
from bpm.store import variables
from bpm.store.rows import TokenRow

Changes = dict[str, VariableEvent]
#: Firings one instance may have in one transaction (each re-reads the tokens).
_MOST = 100
#: Variable changes that are not in the write batch: written as they are made, under the
#: instance's lock (an instance only locked, or even deleted, is never looked at).
_UNDER_LOCK = frozenset({EngineEvent.VARIABLES_DELETED, EngineEvent.LOCAL_VARIABLES_SET})


def settle(tx: Tx) -> None:
    """Evaluate the conditional subscriptions of every instance whose variables this
    transaction changed (see the module's docstring)."""
    if tx.graph_for is None or not (tx.batch.values or tx.instance_locks):
        return
    touched = set(tx.batch.values)
    if tx.instance_locks:  # deletions and changed local variables are made under that lock
        touched.update(
            row["instance_id"]
            for table, row in tx.history.rows
            if table == "engine" and row["type"] in _UNDER_LOCK
        )
    for instance_id in touched:
        if instance_id is not None and tx.may_have_conditions(instance_id):
            changes = _changes(tx, instance_id)
            if changes:
                _evaluate(tx, g=tx.graph_for(instance_id), instance_id=instance_id, changes=changes)


def _changes(tx: Tx, instance_id: UUID) -> Changes:
    """What this transaction did to the instance's variables, by name (the last change of a
    name counts). A set is a create when the instance had no such variable before."""
    found: Changes = {}
    before: set[str] | None = None
    for table, row in tx.history.rows:
        if table != "engine" or row.get("instance_id") != instance_id:
            continue
        kind = row.get("type")
        data = row.get("data") or {}
        if kind == EngineEvent.VARIABLES_DELETED:
            found.update(dict.fromkeys(data.get("names", ()), VariableEvent.DELETE))
        elif kind in (EngineEvent.VARIABLES_CHANGED, EngineEvent.LOCAL_VARIABLES_SET):
            if before is None:
                before = set(variables.load(tx.conn, instance_id))  # not written yet
            for name in data.get("values", {}):
                new = name not in before and kind == EngineEvent.VARIABLES_CHANGED
                found[name] = VariableEvent.CREATE if new else VariableEvent.UPDATE
    return found


def _evaluate(tx: Tx, g: ProcessGraph, instance_id: UUID, changes: Changes) -> None:
    """Under the instance's lock (see ``conditions._holds``): a subscription that began in
    a transaction committed meanwhile is read here, not missed."""
    tx.lock_instance(instance_id)
    fired: set[tuple[UUID, str]] = set()
    for _ in range(_MOST):
        tree = Tree.read(tx, instance_id)
        due = next(_due(tx, g, tree, changes, fired), None)
        if due is None:
            return
        holder, event = due
        fired.add((holder.id, event.id))
        _fire(tx, g, tree, holder, event)


def _due(
    tx: Tx, g: ProcessGraph, tree: Tree, changes: Changes, fired: set[tuple[UUID, str]]
) -> Iterator[tuple[TokenRow, Node]]:
    """The subscriptions whose condition now holds, not fired yet in this transaction. One
    that cannot be evaluated fails its catch token, or opens an incident at the token that
    holds a boundary or event subprocess start (the activity goes on)."""
    for holder, event in _subscriptions(g, tree):
        assert event.condition is not None
        if (holder.id, event.id) in fired or holder.id in tx.conditions_seen:
            continue
        if not event.condition.wants(changes):
            continue
        met = conditions.evaluate(tx, g, holder, event)
        if isinstance(met, str):
            fired.add((holder.id, event.id))
            _failed(tx, holder, met)
            continue
        if met:
            yield holder, event


def _subscriptions(g: ProcessGraph, tree: Tree) -> Iterator[tuple[TokenRow, Node]]:
    for tok in tree.rows():
        if tok.state not in LIVE_TOKEN:
            continue
        node = g.node(tok.node_id)
        waiting = tok.state == TokenState.WAITING
        if waiting and tok.wait_kind == WaitKind.CONDITION and node.condition is not None:
            yield tok, node
        if waiting and tok.wait_kind == WaitKind.EVENT:
            for event in events_after(g, node):
                if event.condition is not None:
                    yield tok, event
        if at_work(g, tok):
            for boundary in conditions.boundaries(g, tok.node_id):
                yield tok, boundary
    for sub in event_subprocesses.subscriptions(g, tree):
        trigger = g.trigger_of(sub.esp.id)
        if trigger.condition is not None:
            yield sub.host, trigger


def _fire(tx: Tx, g: ProcessGraph, tree: Tree, holder: TokenRow, event: Node) -> None:
    tok = tx.current(holder)
    node = g.node(tok.node_id)
    if event.type is NodeType.START:
        sub = next(
            s
            for s in event_subprocesses.subscriptions(g, tree)
            if s.esp.id == event.scope and s.host.id == holder.id
        )
        conditions.later(tx, conditions.start_esp(tx, g, tree, sub))
    elif event.type is NodeType.BOUNDARY:
        conditions.later(tx, conditions.fire_boundary(tx, g, tok, event))
    elif tok.wait_kind == WaitKind.EVENT:
        conditions.later(tx, condition_won(tx, g, tok, event))
    else:
        data = {"condition": event.id}
        moved = move(tx, tok, state=TokenState.ACTIVE, event=TokenEvent.CONDITION_MET, data=data)
        conditions.later(tx, leave(tx, g, moved, node))


def _failed(tx: Tx, holder: TokenRow, message: str) -> None:
    tok = tx.current(holder)
    if tok.wait_kind == WaitKind.CONDITION:
        fail_token(tx, tok, kind="condition", message=message)
    else:
        writes.open_incident(tx, tok, kind="condition", message=message, details=None, task_id=None)
