"""BPMN errors: caught by an error boundary event, or failing the token.

A service task's handler or worker throws at its own activity first, then at the subprocesses
around it, innermost first (BPMN 2.0 10.5.3: an uncaught error propagates to the enclosing
scope); an error end event throws at the subprocesses around it. Catching is interrupting:
the activity (or everything still running inside the subprocess) is left, and the token takes
the boundary's path.
"""

from __future__ import annotations

from dataclasses import replace

from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import NextToken, RunTask, Tx
from bpm.engine.semantics import event_subprocesses, interruptions, scopes
from bpm.engine.semantics.cancelling import cancel_inside, cancel_timers
from bpm.engine.semantics.moves import move
from bpm.engine.semantics.tree import Tree
from bpm.states import EngineEvent, TokenEvent, TokenState
from bpm.store.rows import TokenRow

#: What catching leads to: the token goes on at the boundary, or waits while the activity's
#: interruption listeners run first.
Caught = NextToken | RunTask


def catch_at_activity(
    tx: Tx, g: ProcessGraph, tok: TokenRow, code: str, message: str = ""
) -> Caught | None:
    """``tok`` waits at a task that threw ``code``: take the catching boundary, if any (an
    iteration of a multi-instance activity has none: its body does, ``throw_from_end``)."""
    if tok.scope_id == tok.node_id:
        return None
    catcher = g.catcher(tok.node_id, code)
    if catcher is None:
        return None
    return _take_boundary(tx, g, tok, catcher, code, message, tok.node_id)


def caught_anywhere(g: ProcessGraph, node_id: str, code: str) -> bool:
    """Whether a boundary on ``node_id`` or on a subprocess around it, or an event subprocess
    of a scope around it, catches ``code``."""
    return _innermost_catch(g, node_id, code) is not None


def _innermost_catch(g: ProcessGraph, node_id: str, code: str) -> str | None:
    """What the innermost catch of ``code`` around ``node_id`` declares it catches: ``code``
    itself, or ``"*"`` for a catch-all; None when nothing catches it."""
    scope: str | None = node_id
    while scope is not None:
        if (boundary := g.catcher(scope, code)) is not None:
            return boundary.catches
        inner, scope = scope, g.node(scope).scope
        if (esp := event_subprocesses.error_catcher(g, scope, code, skip=inner)) is not None:
            return g.trigger_of(esp.id).catches
    return None


def throw_from_task(
    tx: Tx, g: ProcessGraph, tok: TokenRow, code: str, message: str = ""
) -> Caught | None:
    """``tok`` waits at a task that threw ``code``: the task's own boundary catches it, else
    the innermost enclosing subprocess whose boundary does (the task is left with it)."""
    caught = catch_at_activity(tx, g, tok, code, message)
    if caught is not None or not caught_anywhere(g, tok.node_id, code):
        return caught
    cancel_timers(tx, tok, reason=f"error {code!r} thrown at {tok.node_id!r}")
    return throw_from_end(tx, g, tok, code, message)


def throw_from_end(
    tx: Tx, g: ProcessGraph, tok: TokenRow, code: str, message: str = ""
) -> Caught | None:
    """An error end event: the innermost enclosing subprocess with a catching boundary ends
    (its remaining tokens are cancelled) and its token takes the boundary's path. At each
    scope on the way out, an event subprocess of that scope catching the code comes first
    (``event_subprocesses``)."""
    tree = Tree.read(tx, tok.instance_id)
    current, scope = tok, tok.scope_id
    came_from: str | None = None
    while True:
        by_esp = event_subprocesses.catch_error(
            tx, g, tree, current, scope, tok, (code, message), came_from
        )
        if by_esp is not None:
            return by_esp
        if scope is None:
            return None
        host = tree.host_of(current, scope)
        if host is None:
            return None
        host = tree.boundaries_of(host)
        catcher = g.catcher(scope, code)
        if catcher is not None:
            _end_scope(tx, tree, host, tok)
            return _take_boundary(tx, g, host, catcher, code, message, tok.node_id)
        current, came_from, scope = host, scope, g.node(scope).scope


def _end_scope(tx: Tx, tree: Tree, host: TokenRow, thrower: TokenRow) -> None:
    inside = tree.inside(host)
    if any(row.id == thrower.id for row in inside):
        move(tx, thrower, state=TokenState.COMPLETED, event=TokenEvent.ERROR_THROWN)
    cancel_inside(tx, host, inside, f"error thrown at {thrower.node_id!r}", spare=thrower.id)


def _take_boundary(
    tx: Tx,
    g: ProcessGraph,
    tok: TokenRow,
    catcher: Node,
    code: str,
    message: str,
    thrown_at: str,
) -> Caught:
    cancel_timers(tx, tok, reason=f"error {code!r} caught by {catcher.id!r}")
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.BPMN_ERROR_CAUGHT,
        node_id=catcher.id,
        token_id=tok.id,
        actor=tx.actor,
        data={"code": code, "message": message, "thrown_at": thrown_at},
    )
    caught = {
        name: value
        for name, value in (
            (catcher.error_code_variable, code),
            (catcher.error_message_variable, message),
        )
        if name is not None
    }
    # errorCodeVariable and errorMessageVariable, written from where the boundary's path
    # begins (not inside the activity's own scope, which ends as the token leaves it)
    scopes.write(tx, g, replace(tok, node_id=catcher.id), caught)
    data = {"code": code, "thrown_at": thrown_at}
    return interruptions.leave_for(tx, g, tx.current(tok), catcher, TokenEvent.ERROR_CAUGHT, data)


def exception_code(g: ProcessGraph, node_id: str, class_names: tuple[str, ...]) -> str | None:
    """The error code a catching error event around ``node_id`` declares for a handler's
    exception, or None. Camunda 7 lets an error code name an exception class
    (``com.acme.PaymentRefused``, ``java.lang.Exception``), caught from delegate code as a
    BPMN error would be; here the code's last dotted part names the class of the exception
    or of one of its bases (``class_names``, most specific first), so ``java.lang.Exception``
    catches any exception a handler raises. A catch-all catches BPMN errors only."""
    declared = sorted({n.catches for n in g.nodes.values() if n.catches not in (None, "*")})
    for name in class_names:
        for code in declared:
            # the innermost catch must name it: a catch-all there would take it instead
            if code.rsplit(".", 1)[-1] == name and _innermost_catch(g, node_id, code) == code:
                return code
    return None
