"""A call activity's token when its called instance has ended: the ``out`` variables come
back and the token leaves, or (the called instance was cancelled) it fails with an incident.

Apart from ``calls`` because leaving goes through ``nodes``, which enters call activities
through ``activities`` and ``calls``.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.model import CallMapping, ProcessGraph
from bpm.engine.core.tx import Next, Stale, Tx
from bpm.engine.semantics import scopes
from bpm.engine.semantics.calls import INCIDENT, mapped
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.nodes import leave
from bpm.errors import BpmError
from bpm.states import ENDED_INSTANCE, InstanceState, TokenState
from bpm.store import instances, variables
from bpm.store.rows import TokenRow


def decide(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """The calling token, nudged: nothing while its called instance runs (or waits for an
    operator); when it ended, go on, or fail if it was cancelled."""
    locked = tx.lock_token(tok)
    if locked is None or locked.version != tok.version or locked.state != TokenState.WAITING:
        raise Stale(f"token {tok.id} moved on before its call ended")
    child = instances.called_by(tx.conn, locked.id)
    if child is None or child.state not in ENDED_INSTANCE:
        return None
    node = g.node(locked.node_id)
    if child.state == InstanceState.CANCELLED:
        fail_token(
            tx,
            locked,
            kind=INCIDENT,
            message=f"call activity {node.id!r}: called instance {child.id} was cancelled;"
            " retry the token to call again",
        )
        return None
    assert node.call is not None
    try:
        shared, local = _outputs(node.call.outputs, variables.load(tx.conn, child.id))
    except BpmError as exc:
        fail_token(tx, locked, kind="mapping", message=f"call activity {node.id!r}: {exc}")
        return None
    scopes.write(tx, g, locked, shared)
    scopes.write(tx, g, locked, local, local=True)
    return leave(tx, g, locked, node)


def _outputs(
    mappings: tuple[CallMapping, ...], child: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What comes back: written as a task's result is (``shared``), or, for a ``local``
    mapping, into the call activity's own scope (``local``)."""
    shared: dict[str, Any] = {}
    local: dict[str, Any] = {}
    for m in mappings:
        into = local if m.local else shared
        if m.all:
            into.update(child)
        else:
            into[m.target or ""] = mapped(m, child)
    return shared, local
