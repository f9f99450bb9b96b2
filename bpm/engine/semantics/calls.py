"""Call activities: a token that starts an instance of another process and waits for it.

Starting the call is here; what happens when the called instance ends is in
``call_returns``. The called instance is an instance of its own, linked to its caller (the
calling instance, the token at the call activity, and the top of the chain of calls). It is
created in the transaction that moves the calling token to WAITING (``CALLED``), so a call
starts it exactly once whatever the broker redelivers: a second delivery finds the token
moved and does nothing.

Locks go down the chain of calls, never up: the caller's transaction may lock the called
instance (cancelling it with the call activity), but a called instance's transaction never
locks its caller. When it ends, it only sends the calling token a job; that token's own
transaction reads how the called instance ended and goes on (``decide``). A lost job is sent
again by the waiting-parents scan.
"""

from __future__ import annotations

import os
from typing import Any

from bpm.definitions.assignments import Text
from bpm.definitions.model import CallBinding, CallMapping, CallSpec, Node, ProcessGraph
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import instances as instance_rows
from bpm.engine.semantics import scopes
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.moves import move
from bpm.errors import BpmError
from bpm.expressions import Expression
from bpm.limits import quoted
from bpm.states import TokenEvent, TokenState, WaitKind
from bpm.store import definitions, instances, tokens
from bpm.store.rows import DefinitionRow, TokenRow

#: How deep calls may nest (an instance called by a called instance … is one deeper each
#: time) before a call fails with an incident: a process that calls itself without end
#: stops there instead of starting instances for ever.
DEFAULT_MAX_DEPTH = 32
MAX_DEPTH_VARIABLE = "BPM_MAX_CALL_DEPTH"

#: The incident kind of a call that could not start (no such process, too deep, a mapping
#: that cannot be evaluated), of a called instance that was cancelled, and of one that has an
#: incident of its own (mirrored on the caller).
INCIDENT = tokens.CALL_INCIDENT


def max_depth() -> int:
    raw = os.environ.get(MAX_DEPTH_VARIABLE, "")
    return int(raw) if raw.strip().isdigit() and int(raw) > 0 else DEFAULT_MAX_DEPTH


def enter(
    tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node, extra: dict[str, Any] | None = None
) -> Next:
    """Start the called instance and wait for it; an incident on the calling token when the
    call cannot start (an operator fixes the cause and retries the token). ``extra``: the
    variables a mapping handler gave, laid over the ``in`` mappings'."""
    spec = node.call
    assert spec is not None, f"{node.id!r} is not a call activity"
    view = scopes.view(tx, g, tok)
    try:
        row = _called_definition(tx, tok, spec, view)
        depth = _depth(tx, tok)
        if depth >= max_depth():
            raise BpmError(
                f"calls nest {depth} deep, the most {MAX_DEPTH_VARIABLE} allows ({max_depth()})"
                "; does the process call itself without end?"
            )
        values = {**inputs(tx, g, tok, spec.inputs, view), **(extra or {})}
        business_key = _business_key(spec, view, tx, tok)
    except BpmError as exc:
        fail_token(tx, tok, kind=INCIDENT, message=f"call activity {node.id!r}: {exc}")
        return None
    assert tx.graph_of_definition is not None
    graph = tx.graph_of_definition(row.id)
    made = instance_rows.create(
        tx, row, graph, values, business_key=business_key, start_key=None, caller=tok
    )
    assert made is not None, "a called instance has no start key to collide on"
    child, root = made
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.CALLED,
        wait_kind=WaitKind.CALLED,
        data={"instance": str(child.id), "key": row.key, "version": row.version},
    )
    tx.advance_later(root.id, 0)
    return None


# --- what is called ------------------------------------------------------------------------


def _called_definition(
    tx: Tx, tok: TokenRow, spec: CallSpec, view: dict[str, Any]
) -> DefinitionRow:
    key = _text(spec.process, view, "calledElement")
    if not isinstance(key, str) or not key:
        raise BpmError(f"calledElement gave {quoted(key)}, not a process key")
    row: DefinitionRow | None
    match spec.binding:
        case CallBinding.LATEST:
            row, which = definitions.latest(tx.conn, key), "any version"
        case CallBinding.VERSION:
            version = _version(spec, view)
            row, which = definitions.by_key_version(tx.conn, key, version), f"version {version}"
        case CallBinding.VERSION_TAG:
            assert spec.version_tag is not None
            row = definitions.by_version_tag(tx.conn, key, spec.version_tag)
            which = f"version tag {spec.version_tag!r}"
        case CallBinding.DEPLOYMENT:
            row, which = _of_deployment(tx, tok, key), "the caller's deployment"
    if row is None:
        raise BpmError(f"no process {key!r} ({which}) is deployed; deploy it, then retry the token")
    return row


def _of_deployment(tx: Tx, tok: TokenRow, key: str) -> DefinitionRow | None:
    inst = instances.get(tx.conn, tok.instance_id)
    own = definitions.by_id(tx.conn, inst.process_def_id) if inst is not None else None
    if own is None or own.deployment_id is None:
        return definitions.latest(tx.conn, key)
    return definitions.of_deployment_or_before(tx.conn, key, own.deployment_id, own.created_at)


def _version(spec: CallSpec, view: dict[str, Any]) -> int:
    assert spec.version is not None
    value = _text(spec.version, view, "calledElementVersion")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BpmError(f"calledElementVersion gave {quoted(value)}, not a version number")
    return value


def _depth(tx: Tx, tok: TokenRow) -> int:
    """How many calls lead to ``tok``'s instance (0: nobody called it)."""
    depth, instance_id = 0, tok.instance_id
    while tx.caller_of is not None and (caller := tx.caller_of(instance_id)) is not None:
        depth, instance_id = depth + 1, caller[0]
    return depth


# --- what crosses the call -----------------------------------------------------------------


def inputs(
    tx: Tx, g: ProcessGraph, tok: TokenRow, mappings: tuple[CallMapping, ...], view: dict[str, Any]
) -> dict[str, Any]:
    """What ``in`` mappings give from ``tok``'s side (a signal throw's variables too)."""
    values: dict[str, Any] = {}
    for m in mappings:
        if m.all:
            source = (
                scopes.local_view(tx, g, tok, tx.load_variables(tok.instance_id))
                if m.local
                else view
            )
            values.update(source)
        else:
            values[m.target or ""] = mapped(m, view)
    return values


def mapped(m: CallMapping, view: dict[str, Any]) -> Any:
    """A ``source`` the other side lacks gives null, as in Camunda."""
    if m.expression is not None:
        return m.expression.evaluate(view)
    return view.get(m.source or "")


def _business_key(spec: CallSpec, view: dict[str, Any], tx: Tx, tok: TokenRow) -> str | None:
    if spec.business_key_from_caller:
        inst = instances.get(tx.conn, tok.instance_id)
        return inst.business_key if inst is not None else None
    if spec.business_key is None:
        return None
    value = spec.business_key.evaluate(view)
    if value is None:
        return None
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise BpmError(f"the business key expression gave {quoted(value)}, not text")
    return str(value) or None


def _text(text: Text, view: dict[str, Any], what: str) -> Any:
    if isinstance(text, Expression):
        try:
            return text.evaluate(view)
        except BpmError as exc:
            raise BpmError(f"{what}: {exc}") from exc
    return text
