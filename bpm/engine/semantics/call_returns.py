"""A call activity's token when its called instance has ended: the ``out`` variables come
back and the token leaves; a BPMN error the called instance sent up is thrown at the call
activity, as is each escalation it sent up (those also while it runs); a called instance
cancelled otherwise fails the token with an incident. And what a call activity's mapping
handler returned (``call_mappings``): the call starts, or its result comes back.

Apart from ``calls`` because leaving goes through ``nodes``, which enters call activities
through ``activities`` and ``calls``.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.model import CallMapping, ProcessGraph
from bpm.engine.core.tx import Next, Stale, Tx
from bpm.engine.semantics import (
    call_mappings,
    called_compensation,
    calls,
    escalations,
    scopes,
    writes,
)
from bpm.engine.semantics.bpmn_errors import throw_from_task
from bpm.engine.semantics.called_errors import propagate, propagated_error
from bpm.engine.semantics.calls import INCIDENT, mapped
from bpm.engine.semantics.cancelling import resolve_incidents
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.instance_state import resume_if_clear, set_instance_state
from bpm.engine.semantics.nodes import leave
from bpm.errors import BpmError
from bpm.states import ENDED_INSTANCE, InstanceState, TokenMode, TokenState
from bpm.store import incidents, instances, variables
from bpm.store.rows import InstanceRow, TaskRow, TokenRow


def decide(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """The calling token, nudged: nothing while its called instance runs (or waits for an
    operator); when it ended, go on, or fail if it was cancelled."""
    if tok.mode == TokenMode.COMPENSATION:
        return called_compensation.decide(tx, g, tok)
    locked = tx.lock_token(tok)
    if locked is None or locked.version != tok.version or locked.state != TokenState.WAITING:
        raise Stale(f"token {tok.id} moved on before its call ended")
    child = instances.called_by(tx.conn, locked.id)
    if child is None:
        return None
    _mirror_incident(tx, locked, child)
    escalated = escalations.receive(tx, g, locked, child)
    if escalated is not None:
        return escalated.next  # an interrupting catch ended the call
    locked = tx.current(locked)
    if child.state not in ENDED_INSTANCE:
        return None
    node = g.node(locked.node_id)
    error = propagated_error(tx, child.id) if child.state == InstanceState.CANCELLED else None
    if child.state == InstanceState.CANCELLED and error is None:
        fail_token(
            tx,
            locked,
            kind=INCIDENT,
            message=f"call activity {node.id!r}: called instance {child.id} was cancelled;"
            " retry the token to call again",
        )
        return None
    # The out variables come back also with an error, as in Camunda (the catching path may
    # read what the called instance had done before it threw).
    assert node.call is not None
    try:
        shared, local = _outputs(node.call.outputs, variables.load(tx.conn, child.id))
    except BpmError as exc:
        fail_token(tx, locked, kind="mapping", message=f"call activity {node.id!r}: {exc}")
        return None
    scopes.write(tx, g, locked, shared)
    scopes.write(tx, g, locked, local, local=True)
    if error is not None:
        return _rethrow(tx, g, locked, *error)
    called_compensation.record_call(tx, locked, node, child)
    if node.call.mapping is not None:
        return call_mappings.run(tx, locked, node, call_mappings.Phase.OUT)
    return leave(tx, g, locked, node)


def _mirror_incident(tx: Tx, tok: TokenRow, child: InstanceRow) -> None:
    """A called instance with an open incident puts one on its calling token too (kind
    ``call-activity``, naming the called instance and its first incident), so the calling
    instance shows it and fails with it; it is resolved when the called instance runs again
    or ends. The calling token itself keeps waiting: an operator repairs the called one."""
    mirrored = [i for i in incidents.open_of_token(tx.conn, tok.id) if i.kind == INCIDENT]
    if child.state == InstanceState.FAILED and not mirrored:
        below = incidents.of_instance(tx.conn, child.id, only_open=True)
        cause = f": {below[0].message}" if below else ""
        writes.open_incident(
            tx,
            tok,
            kind=INCIDENT,
            message=f"called instance {child.id} ({child.process_key}) has an incident{cause}",
            details=str(below[0].id) if below else None,
            task_id=None,
        )
        set_instance_state(
            tx, tok.instance_id, InstanceState.FAILED, only_from=(InstanceState.RUNNING,)
        )
    elif child.state != InstanceState.FAILED and mirrored:
        resolve_incidents(tx, tok.id, f"called instance {child.id} is {child.state}")
        resume_if_clear(tx, tok.instance_id)


def _rethrow(tx: Tx, g: ProcessGraph, tok: TokenRow, code: str, message: str, at: str) -> Next:
    """The called instance sent a BPMN error up: the call activity throws it, as a task that
    threw it would (its own boundary, else a subprocess's around it, else further up)."""
    caught = throw_from_task(tx, g, tok, code, message)
    if caught is not None:
        return caught
    if propagate(tx, tok, code, message):
        return None
    fail_token(
        tx,
        tok,
        kind="bpmn-error",
        message=f"call activity {tok.node_id!r}: the called instance threw error {code!r} at"
        f" {at!r} and no error boundary catches it",
    )
    return None


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


def mapping_returned(
    tx: Tx, g: ProcessGraph, tok: TokenRow, task: TaskRow, values: dict[str, Any]
) -> Next:
    """A call activity's mapping handler returned: start the call with its values, or write
    them back and leave."""
    node = g.node(task.node_id)
    if call_mappings.phase_of(task) is call_mappings.Phase.IN:
        return calls.enter(tx, g, tok, node, extra=values)
    scopes.write(tx, g, tok, values)
    return leave(tx, g, tok, node)
