"""Escalations: a throw or end event escalates a code outward, as Camunda 7 does. The search
goes from the thrower's scope outward; at each scope, the scope's own event subprocess with an
escalation start (a matching code before a catch-all) comes before the escalation boundary
event of the subprocess around it; past the process, the call activity that started the
instance catches it (``called_escalations``). Interrupting, the catcher ends the scope's work (the
thrower with it); non-interrupting, it starts beside it and the thrower goes on. An
escalation nobody catches is not an error: the thrower goes on (an end event ends its path).
"""

from __future__ import annotations

from dataclasses import dataclass

from bpm.definitions.model import Node, ProcessGraph, by_code
from bpm.engine.core.tx import Next, NextToken, Tx
from bpm.engine.semantics import (
    boundary_events,
    called_escalations,
    event_subprocesses,
    scopes,
)
from bpm.engine.semantics.tree import Tree
from bpm.states import EngineEvent, TokenEvent
from bpm.store.rows import InstanceRow, TokenRow


@dataclass(frozen=True)
class Caught:
    """Where the escalation went: ``next`` is the catcher's first step; ``interrupting``:
    the thrower was ended by it."""

    next: Next
    interrupting: bool


def throw(tx: Tx, g: ProcessGraph, tok: TokenRow, code: str) -> Caught | None:
    """Escalate ``code`` from ``tok``; None when nothing catches it."""
    _record(tx, tok, code)
    return _search(tx, g, tok, code, own=False)


def throw_going_on(tx: Tx, g: ProcessGraph, tok: TokenRow, code: str) -> Caught | None:
    """Escalate from a throw or end event: an interrupting catch is returned (the thrower
    ended with it); after a non-interrupting one, started beside it, or none, the thrower
    goes on (None)."""
    caught = throw(tx, g, tok, code)
    if caught is not None and caught.interrupting:
        return caught
    if caught is not None:
        go_on_beside(tx, caught)
    return None


def receive(tx: Tx, g: ProcessGraph, calling: TokenRow, called: InstanceRow) -> Caught | None:
    """A call activity's token takes the escalations its called instance sent up and it has
    not received yet, in order: each escalates from the call activity (its own boundary
    first). Returns the interrupting catch, if one ended the call; non-interrupting catches
    have been started beside it. A called process that cannot escalate costs no read."""
    if tx.graph_of_definition is not None:
        if not tx.graph_of_definition(called.process_def_id).may_escalate_up:
            return None
    for escalation in called_escalations.pending(tx, called.id):
        called_escalations.mark_received(tx, called.id, calling, escalation)
        _record(tx, tx.current(calling), escalation.code)
        caught = _search(tx, g, tx.current(calling), escalation.code, own=True)
        if caught is not None and caught.interrupting:
            return caught
        if caught is not None:
            go_on_beside(tx, caught)
    return None


def _record(tx: Tx, tok: TokenRow, code: str) -> None:
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.ESCALATION_THROWN,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
        data={"code": code},
    )


def _search(tx: Tx, g: ProcessGraph, tok: TokenRow, code: str, *, own: bool) -> Caught | None:
    """From ``tok`` outward; ``own``: ``tok`` is at an activity whose own boundaries come
    first (a call activity its called instance escalated to). Past the process, the caller
    of a called instance is asked (``called_escalations``)."""
    tree = Tree.read(tx, tok.instance_id)
    current = tree.get(tok.id) or tok
    if own and (boundary := _boundary_catcher(g, current.node_id, code)) is not None:
        return _at_boundary(tx, g, current, boundary, code)
    scope = current.scope_id
    while True:
        esp = _esp_catcher(g, scope, code)
        host = event_subprocesses.host_of(tree, current, scope)
        if (
            esp is not None
            and host is not None
            and event_subprocesses.listening(g, tree, host, scope)
        ):
            _set_code(tx, g, host, g.trigger_of(esp.id), code)
            sub = event_subprocesses.Subscription(host, scope, esp)
            data = {"escalation": code}
            started = event_subprocesses.start(
                tx, g, tree, sub, TokenEvent.ESCALATED, data, thrower=tok
            )
            return Caught(started, g.trigger_of(esp.id).interrupting)
        if scope is None:
            interrupting = called_escalations.send_up(tx, tx.current(tok), code)
            return None if interrupting is None else Caught(None, interrupting)
        if host is None:
            return None
        boundary = _boundary_catcher(g, scope, code)
        if boundary is not None:
            return _at_boundary(tx, g, host, boundary, code)
        current, scope = host, host.scope_id


def _at_boundary(tx: Tx, g: ProcessGraph, host: TokenRow, boundary: Node, code: str) -> Caught:
    _set_code(tx, g, host, boundary, code)
    if boundary.interrupting:
        nxt = boundary_events.interrupt(
            tx, g, tx.current(host), boundary, TokenEvent.ESCALATED, "escalation"
        )
        return Caught(nxt, True)
    return Caught(boundary_events.spawn(tx, tx.current(host), boundary), False)


def _set_code(tx: Tx, g: ProcessGraph, host: TokenRow, catcher: Node, code: str) -> None:
    """``escalationCodeVariable``: the caught code, written from the scope's token."""
    if catcher.escalation_code_variable is not None:
        scopes.write(tx, g, tx.current(host), {catcher.escalation_code_variable: code})


def go_on_beside(tx: Tx, caught: Caught) -> None:
    """A non-interrupting catcher's path is sent as a job of its own; the thrower goes on."""
    if isinstance(caught.next, NextToken):
        tx.advance_later(caught.next.token_id, caught.next.version)


def _esp_catcher(g: ProcessGraph, scope: str | None, code: str) -> Node | None:
    esps = [g.node(e) for e in g.event_subprocesses.get(scope, ())]
    return by_code(esps, code, lambda esp: g.trigger_of(esp.id).escalation)


def _boundary_catcher(g: ProcessGraph, activity: str, code: str) -> Node | None:
    return g.catcher(activity, code, lambda node: node.escalation)
