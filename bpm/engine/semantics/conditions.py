"""Conditional events as their subscriptions begin: a conditional catch event reached, an
activity with conditional boundary events entered, a scope with conditional event
subprocesses started, an event-based gateway with conditional events after it reached.

As Camunda 7 does, the condition is evaluated when the subscription begins: a catch event
whose condition already holds passes at once, a boundary event or event subprocess start
whose condition holds fires at once. Otherwise the subscription is the token itself, as for
messages (nothing is stored): the catch token waits (``WaitKind.CONDITION``), the activity's
token works there, the scope's host runs, and ``condition_changes`` evaluates them again
when a transaction changes the instance's variables. The tokens evaluated here are noted in
``Tx.conditions_seen``: the changes their own transaction made came before them.

A condition that cannot be evaluated (a variable it reads is missing, it is not a boolean)
fails the token that reached it, with an incident, as a flow's condition does.
"""

from __future__ import annotations

from dataclasses import dataclass

from bpm.definitions.model import ACTIVITIES, Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, RunTask, Tx
from bpm.engine.semantics import boundary_events, event_subprocesses, scopes
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.moves import move
from bpm.engine.semantics.tree import Tree
from bpm.errors import ExpressionEvalError, MissingVariable
from bpm.expressions import evaluate_condition
from bpm.states import TokenEvent, TokenState, WaitKind
from bpm.store.rows import TokenRow


@dataclass(frozen=True)
class Fired:
    """A subscription fired as it began and took the token elsewhere: the step returns
    ``next`` instead of going on."""

    next: Next


def evaluate(tx: Tx, g: ProcessGraph, tok: TokenRow, event: Node) -> bool | str:
    """Whether ``event``'s condition holds over what ``tok`` sees; the reason as text when
    it cannot be evaluated."""
    assert event.condition is not None
    try:
        return evaluate_condition(event.condition.expression, scopes.view(tx, g, tok))
    except MissingVariable as exc:
        return (
            f"condition of {event.id!r} reads variable {exc.name!r}, which the instance "
            f"does not have"
        )
    except ExpressionEvalError as exc:
        return f"condition of {event.id!r} failed: {exc}"


def _holds(tx: Tx, g: ProcessGraph, tok: TokenRow, event: Node) -> bool | None:
    """``evaluate``, failing ``tok`` with an incident when it cannot (None then).

    A subscription begins under its instance's lock, as a change of the instance's
    variables is evaluated (``condition_changes``): either the change committed first and
    this evaluation, after the lock, sees it, or the subscription did and the change's
    evaluation sees it waiting. Without the lock each could miss the other, and the
    condition would never fire."""
    tx.lock_instance(tok.instance_id)
    result = evaluate(tx, g, tok, event)
    if isinstance(result, str):
        fail_token(tx, tx.current(tok), kind="condition", message=result)
        return None
    return result


def arrive(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> bool:
    """A token reached a conditional catch event: True when it passes at once, else it
    waits (or failed)."""
    met = _holds(tx, g, tok, node)
    if met:
        return True
    if met is False:
        move(
            tx,
            tok,
            state=TokenState.WAITING,
            event=TokenEvent.WAITING,
            wait_kind=WaitKind.CONDITION,
        )
        tx.conditions_seen.add(tok.id)
    return False


def boundaries(g: ProcessGraph, node_id: str) -> list[Node]:
    """The conditional boundary events on an activity."""
    return [g.node(b) for b in g.boundaries.get(node_id, ()) if g.node(b).condition is not None]


def enter(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Fired | None:
    """A token enters an activity (a multi-instance body, not an iteration): each
    conditional boundary event on it whose condition holds fires now. Interrupting, the
    token takes the boundary's path and never enters; non-interrupting, a path starts beside
    the activity, which is entered as usual."""
    if node.type not in ACTIVITIES or tok.scope_id == tok.node_id:
        return None
    found = boundaries(g, node.id)
    if not found:
        return None
    tx.conditions_seen.add(tok.id)
    for boundary in found:
        met = _holds(tx, g, tok, boundary)
        if met is None:
            return Fired(None)
        if met and boundary.interrupting:
            return Fired(fire_boundary(tx, g, tx.current(tok), boundary))
        if met:
            later(tx, fire_boundary(tx, g, tx.current(tok), boundary))
    return None


def fire_boundary(tx: Tx, g: ProcessGraph, tok: TokenRow, boundary: Node) -> Next:
    if boundary.interrupting:
        return boundary_events.interrupt(
            tx, g, tok, boundary, TokenEvent.CONDITION_MET, "condition"
        )
    return boundary_events.spawn(tx, tok, boundary)  # moves ``tok``: a racer conflicts


def scope_started(tx: Tx, g: ProcessGraph, tok: TokenRow, start_event: Node) -> Fired | None:
    """``tok`` passes the start event of a scope: each of the scope's conditional event
    subprocesses whose condition holds starts now (interrupting: instead of the scope's
    own path)."""
    esps = [
        g.node(e)
        for e in g.event_subprocesses.get(start_event.scope, ())
        if g.trigger_of(e).condition is not None
    ]
    if not esps:
        return None
    tree = Tree.read(tx, tok.instance_id)
    host = event_subprocesses.host_of(tree, tok, start_event.scope)
    if host is None:
        return None
    tx.conditions_seen.add(host.id)
    for esp in esps:
        met = _holds(tx, g, host, g.trigger_of(esp.id))
        if met is None:
            return Fired(None)
        if not met:
            continue
        sub = event_subprocesses.Subscription(tx.current(host), start_event.scope, esp)
        started = start_esp(tx, g, Tree.read(tx, tok.instance_id), sub)
        if g.trigger_of(esp.id).interrupting:
            return Fired(started)
        later(tx, started)
    return None


def start_esp(
    tx: Tx, g: ProcessGraph, tree: Tree, sub: event_subprocesses.Subscription
) -> NextToken:
    data = {"condition": g.trigger_of(sub.esp.id).id}
    return event_subprocesses.start(tx, g, tree, sub, TokenEvent.CONDITION_MET, data)


def first_after_gateway(tx: Tx, g: ProcessGraph, tok: TokenRow, events: list[Node]) -> Node | bool:
    """The first conditional event after an event-based gateway whose condition holds as
    the token arrives; False when none does; True when one failed the token."""
    tx.conditions_seen.add(tok.id)
    for event in events:
        if event.type is NodeType.CONDITIONAL:
            met = _holds(tx, g, tok, event)
            if met is None:
                return True
            if met:
                return event
    return False


def later(tx: Tx, nxt: Next) -> None:
    """What a fired subscription leads to, sent as a job of its own (the step that fired it
    goes on with its own token)."""
    if isinstance(nxt, NextToken):
        tx.advance_later(nxt.token_id, nxt.version)
    elif isinstance(nxt, RunTask):
        tx.run_handler_later(nxt.task_id)
