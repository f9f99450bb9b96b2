"""Event subprocesses: starting one inside the scope (process or subprocess) that holds it.

This module owns event-subprocess triggering: which event subprocess of a scope an error, a
message or a timer starts, whether the scope still listens, and what starting it does to
the scope. The callers only ask it: ``bpmn_errors`` at each scope of an error's way out,
``operations/messages`` for each instance a message names, the timer firing for a timer
that belongs to an event subprocess's start.

The token standing for a scope (its *host*) is the instance's root token at process level,
else the token WAITING at the subprocess. Starting an event subprocess:

- **interrupting**: everything else running in the scope is cancelled (tasks, timers, child
  tokens, called instances: ``cancelling``), the scope's other subscriptions go with it, and
  the event subprocess runs alone. At process level the root token itself moves to the event
  subprocess, so the instance ends when it ends; in a subprocess a new body token runs it, so
  the subprocess completes and leaves by its outgoing flow when it ends.
- **non-interrupting**: a new token runs the event subprocess beside the scope's work, as a
  child of the host; the scope waits for it before it completes (``ProcessGraph.spawns_tokens``).

Either way the host is moved (a ``SPAWNED`` row, next version) in the same transaction, so a
transaction that read the scope before and changes it after (a second message, a terminate,
an error leaving the scope) conflicts, reads again and sees the new token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from bpm.definitions.model import Node, ProcessGraph, by_code
from bpm.engine.core.tx import NextToken, Tx
from bpm.engine.semantics import scopes, writes
from bpm.engine.semantics.cancelling import cancel_inside, cancel_timers, end_work
from bpm.engine.semantics.instance_state import resume_if_clear
from bpm.engine.semantics.moves import create, move, new_token
from bpm.engine.semantics.tree import Tree
from bpm.states import LIVE_TOKEN, EngineEvent, LinkType, TokenEvent, TokenState, WaitKind
from bpm.store.rows import TokenRow


@dataclass(frozen=True)
class Subscription:
    """An event subprocess ``esp`` of ``scope`` (None: the process) that its ``host`` token
    listens for now."""

    host: TokenRow
    scope: str | None
    esp: Node

    @property
    def instance_id(self) -> UUID:
        return self.host.instance_id


def error_catcher(g: ProcessGraph, scope: str | None, code: str, skip: str | None) -> Node | None:
    """The event subprocess of ``scope`` whose error start catches ``code``: by its code, else
    a catch-all, as Camunda. ``skip``: the event subprocess the error was thrown in, which
    does not catch its own error again (Camunda's rule against re-throwing)."""
    esps = [g.node(e) for e in g.event_subprocesses.get(scope, ()) if e != skip]
    return by_code(esps, code, lambda esp: g.trigger_of(esp.id).catches)


def host_of(tree: Tree, tok: TokenRow, scope: str | None) -> TokenRow | None:
    """The token standing for ``scope`` above ``tok``: the root token for the process."""
    if scope is None:
        row: TokenRow | None = tok
        while row is not None and row.parent_token_id is not None:
            row = tree.get(row.parent_token_id)
        return row
    return tree.host_of(tok, scope)


def listening(g: ProcessGraph, tree: Tree, host: TokenRow, scope: str | None) -> bool:
    """Whether ``host`` still stands for a running ``scope`` whose subscriptions are armed: it
    is live there, and no interrupting event subprocess of the scope has started."""
    if host.state not in LIVE_TOKEN:
        return False
    if scope is None:
        if host.parent_token_id is not None:
            return False
        return not _interrupting(g, host.node_id)
    if host.node_id != scope or host.wait_kind != WaitKind.CHILDREN or host.via_flow is None:
        return False
    return not any(
        _interrupting(g, c.node_id) for c in tree.children(host.id) if c.state in LIVE_TOKEN
    )


def _interrupting(g: ProcessGraph, node_id: str) -> bool:
    node = g.node(node_id)
    return node.triggered_by_event and g.trigger_of(node.id).interrupting


def subscriptions(g: ProcessGraph, tree: Tree) -> list[Subscription]:
    """Every event subprocess whose start (error, message or timer) listens in this instance
    now: those of each running scope that no interrupting event subprocess has taken over."""
    out: list[Subscription] = []
    for host in tree.rows():
        # the root token stands for the process, and also for a subprocess it waits at
        held: list[str | None] = [None] if host.parent_token_id is None else []
        if g.node(host.node_id).is_scope:
            held.append(host.node_id)
        for scope in held:
            esps = g.event_subprocesses.get(scope, ())
            if esps and listening(g, tree, host, scope):
                out.extend(Subscription(host, scope, g.node(e)) for e in esps)
    return out


def message_subscriptions(g: ProcessGraph, tree: Tree, message: str) -> list[Subscription]:
    """Every event subprocess a message named ``message`` starts in this instance now."""
    return [s for s in subscriptions(g, tree) if g.trigger_of(s.esp.id).message == message]


def start(
    tx: Tx,
    g: ProcessGraph,
    tree: Tree,
    sub: Subscription,
    event: TokenEvent,
    data: dict[str, Any],
    thrower: TokenRow | None = None,
) -> NextToken:
    """Start ``sub``'s event subprocess (interrupting or not, as its start event says)."""
    tx.lock_instance(sub.host.instance_id)
    trigger = g.trigger_of(sub.esp.id)
    data = {"event_subprocess": sub.esp.id, **data}
    if not trigger.interrupting:
        return _beside(tx, sub, data)
    reason = f"interrupted by event subprocess {sub.esp.id!r}"
    if sub.scope is None:
        return _take_root(tx, g, tree, sub, event, data, thrower, reason)
    inside = tree.inside(sub.host)
    _stop(tx, sub.host, inside, thrower, reason)
    disarm(tx, g, sub.host, sub.scope, reason)  # the scope's other subscriptions
    return _beside(tx, sub, data, concurrent=False)


def _stop(
    tx: Tx, host: TokenRow, inside: list[TokenRow], thrower: TokenRow | None, reason: str
) -> None:
    """Cancel what runs in the scope; a thrower inside it ends as having thrown."""
    spare = thrower.id if thrower is not None else None
    if thrower is not None and any(row.id == thrower.id for row in inside):
        move(tx, tx.current(thrower), state=TokenState.COMPLETED, event=TokenEvent.ERROR_THROWN)
    cancel_inside(tx, host, inside, reason, spare=spare)


def _take_root(
    tx: Tx,
    g: ProcessGraph,
    tree: Tree,
    sub: Subscription,
    event: TokenEvent,
    data: dict[str, Any],
    thrower: TokenRow | None,
    reason: str,
) -> NextToken:
    """Process level, interrupting: the root token leaves whatever it was doing for the event
    subprocess; everything below it is cancelled."""
    root = sub.host
    _stop(tx, root, tree.below(root), thrower, reason)
    current = tx.current(root)
    failed = current.state == TokenState.FAILED
    if thrower is None or thrower.id != root.id:
        end_work(tx, current, reason)
    else:
        cancel_timers(tx, current, reason)
    moved = move(
        tx,
        tx.current(current),
        state=TokenState.ACTIVE,
        event=event,
        node_id=sub.esp.id,
        via_flow=None,
        data=data,
    )
    disarm(tx, g, moved, None, reason)  # the process's other subscriptions
    if failed:
        resume_if_clear(tx, root.instance_id)
    return NextToken(moved.id, moved.version, moved)


def _beside(
    tx: Tx, sub: Subscription, data: dict[str, Any], *, concurrent: bool = True
) -> NextToken:
    """A new token at the event subprocess, a child of the scope's host (a body token of a
    subprocess; beside the main path at process level). The host is moved too (see the
    module's docstring)."""
    host = tx.current(sub.host)
    move(tx, host, state=host.state, event=TokenEvent.SPAWNED, wait_kind=host.wait_kind, data=data)
    child = new_token(
        tx,
        instance_id=host.instance_id,
        node_id=sub.esp.id,
        parent=host.id,
        scope_id=sub.scope,
        concurrent=concurrent,
        via_flow=None,
    )
    kind = LinkType.SUBPROCESS if not concurrent else LinkType.FORK
    create(tx, [child], [(host.id, child.id, kind)])
    return NextToken(child.id, 0)


def catch_error(
    tx: Tx,
    g: ProcessGraph,
    tree: Tree,
    current: TokenRow,
    scope: str | None,
    thrower: TokenRow,
    error: tuple[str, str],
    came_from: str | None,
) -> NextToken | None:
    """An error on its way out reached ``scope``: its event subprocess catches it, if one
    does (before the boundary events of the activity around the scope, as BPMN says)."""
    code, message = error
    esp = error_catcher(g, scope, code, came_from)
    if esp is None:
        return None
    host = host_of(tree, current, scope)
    if host is None:
        return None
    trigger = g.trigger_of(esp.id)
    tx.history.engine(
        instance_id=thrower.instance_id,
        at=tx.now,
        type=EngineEvent.BPMN_ERROR_CAUGHT,
        node_id=trigger.id,
        token_id=host.id,
        actor=tx.actor,
        data={"code": code, "message": message, "thrown_at": thrower.node_id},
    )
    data = {"code": code, "thrown_at": thrower.node_id}
    sub = Subscription(host, scope, esp)
    nxt = start(tx, g, tree, sub, TokenEvent.ERROR_CAUGHT, data, thrower=thrower)
    caught = {
        name: value
        for name, value in (
            (trigger.error_code_variable, code),
            (trigger.error_message_variable, message),
        )
        if name is not None
    }
    if caught:  # from where the event subprocess begins, as for an error boundary
        at = nxt.row if nxt.row is not None else tx.token(nxt.token_id)
        assert at is not None
        scopes.write(tx, g, replace(at, node_id=esp.id), caught)
    return nxt


def end_beside(tx: Tx, g: ProcessGraph, tree: Tree, tok: TokenRow, reason: str) -> None:
    """A terminate end event ends ``tok``'s whole scope: in a subprocess that includes the
    event subprocesses running there, which hang from the subprocess's token beside the body
    path the terminate cancelled."""
    if tok.scope_id is None or g.node(tok.scope_id).triggered_by_event:
        return  # the process's run under its root; an event subprocess's own scope has none
    host = tree.host_of(tok, tok.scope_id)
    if host is None:
        return
    for child in tree.children(host.id):
        if g.node(child.node_id).triggered_by_event and child.state in LIVE_TOKEN:
            cancel_inside(tx, host, [child, *tree.below(child)], reason)


# --- timer starts: armed with their scope, fired by the timer scan -----------------------


def disarm(tx: Tx, g: ProcessGraph, host: TokenRow, scope: str | None, reason: str) -> None:
    """Remove the timer subscriptions of ``scope`` that ``host`` holds (its scope ended or an
    interrupting event subprocess started in it); the host's other timers stay."""
    starts = {g.trigger_of(e).id for e in g.event_subprocesses.get(scope, ())}
    for timer in tx.scheduled_timers(host):
        if timer.node_id in starts:
            writes.cancel_timer(tx, timer, reason)


def timer_subscription(
    tx: Tx, g: ProcessGraph, trigger: Node, host: TokenRow | None
) -> tuple[Tree, Subscription] | None:
    """The subscription a due timer of the start event ``trigger`` stands for, if its scope
    still listens (else the timer is left over, and is retired)."""
    if host is None:
        return None
    esp = g.node(trigger.scope or "")
    tree = Tree.read(tx, host.instance_id)
    if listening(g, tree, host, esp.scope):
        return tree, Subscription(host, esp.scope, esp)
    return None
