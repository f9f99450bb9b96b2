"""Variable scopes: which variables a token sees, and where a write goes.

The instance is the outermost scope. An activity or subprocess is a scope of its own while a
token is at it: its local variables (made by input mappings, or by a writer that asks for a
local write) belong to that token at that node, and end, with a history row, when the token
leaves it. A token sees the instance's variables overlaid by those of every scope it is in,
innermost last, so an inner variable shadows an outer one of the same name. A write goes to
the innermost scope that already has the name, else to the instance; a local write goes to
the writer's own scope. Output mappings are evaluated over what the token sees inside and
written from the scope around it, by the same rule.

Only a definition with mappings (``ProcessGraph.has_mappings``) or a transaction that made a
local write pays for any of this: otherwise a view is the instance's variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from bpm.definitions import mappings
from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Tx
from bpm.engine.semantics.tree import Tree
from bpm.errors import ExpressionEvalError
from bpm.states import EngineEvent
from bpm.store import local_variables, variables
from bpm.store.rows import TaskRow, TokenRow

#: A scope: the token, and the node it is at.
Scope = tuple[UUID, str]
Locals = dict[Scope, dict[str, Any]]


def view(tx: Tx, g: ProcessGraph, tok: TokenRow) -> dict[str, Any]:
    """The variables ``tok`` sees, as this transaction leaves them."""
    return overlay(tx, g, tok, tx.load_variables(tok.instance_id))


def overlay(tx: Tx, g: ProcessGraph, tok: TokenRow, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (the instance's variables) with the local variables of every scope
    ``tok`` is in laid over them, innermost last."""
    if not (g.has_mappings or tx.local_scopes):
        return values
    found, chain = _found_and_chain(tx, g, tok)
    if found:
        for scope in reversed(chain):
            values.update(found.get(scope, {}))
    return values


def local_view(tx: Tx, g: ProcessGraph, tok: TokenRow, values: dict[str, Any]) -> dict[str, Any]:
    """The local variables of the scope ``tok`` runs in, as Camunda's ``localVariables``
    reads an execution's: its own scope's when its node is one (it has input mappings or
    local variables), else the innermost subprocess's around it, else the instance's
    (``values``), since a task directly in the process runs in the instance's scope."""
    found = _locals(tx, tok.instance_id)
    own = (tok.id, tok.node_id)
    if g.nodes[tok.node_id].inputs or own in found:
        return dict(found.get(own, {}))
    chain = _chain(tx, tok, found)
    return dict(found.get(chain[1], {})) if len(chain) > 1 else values


def own_locals(tx: Tx, tok: TokenRow) -> dict[str, Any]:
    """The local variables of ``tok``'s own scope (a multi-instance body's counters)."""
    own = (tok.id, tok.node_id)
    return dict(_locals(tx, tok.instance_id, [own]).get(own, {}))


def view_of_task(tx: Tx, g: ProcessGraph, task: TaskRow) -> dict[str, Any]:
    """What the token of ``task`` sees (the token is read only when the definition has
    scopes)."""
    if not (g.has_mappings or tx.local_scopes):
        return variables.load(tx.conn, task.instance_id)
    owner = tx.token(task.token_id)
    return view(tx, g, owner) if owner is not None else tx.load_variables(task.instance_id)


def write(
    tx: Tx,
    g: ProcessGraph,
    tok: TokenRow,
    values: Mapping[str, Any],
    *,
    local: bool = False,
    outward: bool = False,
) -> None:
    """Write ``values`` from ``tok``'s scope: each to the innermost scope that has its name,
    else to the instance; with ``local``, all to ``tok``'s own scope; with ``outward``, from
    the scope around ``tok``'s own (an output mapping)."""
    if not values:
        return
    if local:
        _set_local(tx, tok.instance_id, (tok.id, tok.node_id), dict(values))
        return
    if not (g.has_mappings or tx.local_scopes):
        tx.write_variables(tok.instance_id, dict(values))
        return
    found, chain = _found_and_chain(tx, g, tok)
    chain = chain[1 if outward else 0 :]
    to_instance: dict[str, Any] = {}
    to_scope: dict[Scope, dict[str, Any]] = {}
    for name, value in values.items():
        owner = next((s for s in chain if name in found.get(s, {})), None)
        if owner is None:
            to_instance[name] = value
        else:
            to_scope.setdefault(owner, {})[name] = value
    for scope, part in to_scope.items():
        _set_local(tx, tok.instance_id, scope, part)
    tx.write_variables(tok.instance_id, to_instance)


def write_for_task(tx: Tx, g: ProcessGraph, task: TaskRow, values: Mapping[str, Any]) -> None:
    """``write`` from the token of ``task`` (read only when the definition has scopes)."""
    if not (g.has_mappings or tx.local_scopes):
        tx.write_variables(task.instance_id, dict(values))
        return
    owner = tx.token(task.token_id)
    if owner is not None:
        write(tx, g, owner, values)


def enter(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> str | None:
    """Input mappings: the node's local variables, from what ``tok`` sees as it enters.
    Returns why they could not be made (the token then fails), or None."""
    if not node.inputs:
        return None
    try:
        values = mappings.evaluate(node.inputs, view(tx, g, tok))
    except ExpressionEvalError as exc:  # MissingVariable included
        return f"input mapping of {node.id!r}: {exc}"
    _set_local(tx, tok.instance_id, (tok.id, node.id), values, fresh=True)
    return None


def complete(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> str | None:
    """Output mappings: copy results out of the node's scope as ``tok`` completes it.
    Returns why they could not be evaluated (the token then fails), or None."""
    if not node.outputs:
        return None
    try:
        values = mappings.evaluate(node.outputs, view(tx, g, tok))
    except ExpressionEvalError as exc:
        return f"output mapping of {node.id!r}: {exc}"
    write(tx, g, tok, values, outward=True)
    return None


def end(tx: Tx, g: ProcessGraph | None, tok: TokenRow) -> None:
    """``tok`` leaves its node: that scope's local variables end with it."""
    scope = (tok.id, tok.node_id)
    node = g.node(tok.node_id) if g is not None else None
    if scope not in tx.local_scopes and not (node and (node.inputs or node.multi_instance)):
        return
    tx.local_scopes.discard(scope)
    names = local_variables.end(tx.conn, tok.instance_id, tok.id, tok.node_id)
    tx.note_locked(tok.instance_id)  # the statement locks the instance's row first
    if names:
        tx.history.engine(
            instance_id=tok.instance_id,
            at=tx.now,
            type=EngineEvent.LOCAL_VARIABLES_ENDED,
            node_id=tok.node_id,
            token_id=tok.id,
            actor=tx.actor,
            data={"names": names},
        )


def _set_local(
    tx: Tx, instance_id: UUID, scope: Scope, values: dict[str, Any], *, fresh: bool = False
) -> None:
    """Write local variables of ``scope``. Unless the scope is ``fresh`` (just entered: its
    rows are new, and no other transaction can be waiting for them), rows that exist change:
    the instance's row is locked first (``Tx.lock_instance``)."""
    if not values:
        return
    if not fresh:
        tx.lock_instance(instance_id)
    token_id, node_id = scope
    local_variables.write(tx.conn, instance_id, token_id, node_id, values, tx.now)
    tx.local_scopes.add(scope)
    tx.history.engine(
        instance_id=instance_id,
        at=tx.now,
        type=EngineEvent.LOCAL_VARIABLES_SET,
        node_id=node_id,
        token_id=token_id,
        actor=tx.actor,
        data={"values": values},
    )


def enter_scopes(tx: Tx, instance_id: UUID, scopes: Locals) -> None:
    """Local variables of new scopes (tokens this transaction created), in one statement:
    their rows are new, so no lock is needed."""
    local_variables.write_scopes(tx.conn, instance_id, scopes, tx.now)
    for scope, values in scopes.items():
        tx.local_scopes.add(scope)
        tx.history.engine(
            instance_id=instance_id,
            at=tx.now,
            type=EngineEvent.LOCAL_VARIABLES_SET,
            node_id=scope[1],
            token_id=scope[0],
            actor=tx.actor,
            data={"values": values},
        )


def _found_and_chain(tx: Tx, g: ProcessGraph, tok: TokenRow) -> tuple[Locals, list[Scope]]:
    """The local variables that matter to ``tok`` and its chain of scopes. An iteration of a
    multi-instance activity directly in the process has a known chain (itself, its body):
    only those two scopes are read, not every iteration's, nor the tree."""
    if tok.scope_id == tok.node_id and tok.parent_token_id is not None:
        if g.node(tok.node_id).scope is None:
            chain = [(tok.id, tok.node_id), (tok.parent_token_id, tok.node_id)]
            return _locals(tx, tok.instance_id, chain), chain
    found = _locals(tx, tok.instance_id)
    return found, (_chain(tx, tok, found) if found else [])


def _locals(tx: Tx, instance_id: UUID, only: list[Scope] | None = None) -> Locals:
    """The instance's local variables by scope (``only``: of these scopes' tokens)."""
    found: Locals = {}
    rows = (
        local_variables.of_instance(tx.conn, instance_id)
        if only is None
        else local_variables.of_tokens(tx.conn, instance_id, [t for t, _ in only])
    )
    for row in rows:
        found.setdefault((row.scope_token_id, row.scope_node_id), {})[row.name] = row.value
    return found


def _chain(tx: Tx, tok: TokenRow, found: Locals) -> list[Scope]:
    """The scopes ``tok`` is in, innermost first: its own, then each subprocess around it
    (not the one whose boundary event started its path: that path runs beside it)."""
    own = (tok.id, tok.node_id)
    chain = [own]
    body = tok.parent_token_id if tok.scope_id == tok.node_id else None
    if body is not None:  # a multi-instance iteration: its body is the scope around it
        chain.append((body, tok.node_id))
    if tok.scope_id is None or all(scope in chain for scope in found):
        return chain  # no other scope has local variables: the tree need not be read
    tree = Tree.read(tx, tok.instance_id)
    current = tree.get(body or tok.id) or tok
    while current.scope_id is not None:
        host = tree.host_of(current, current.scope_id)
        if host is None:
            break
        chain.append((host.id, host.node_id))
        current = host
    return chain


def scopes_of(rows: list[local_variables.LocalRow]) -> dict[str, dict[str, Any]]:
    """Local variables by scope, keyed ``"<token id>@<node id>"`` (views and replay)."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        out.setdefault(f"{row.scope_token_id}@{row.scope_node_id}", {})[row.name] = row.value
    return out
