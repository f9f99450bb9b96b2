"""A signal thrown by a token (an intermediate signal throw or signal end event): the signal
row and the snapshot of its recipients are written in the throwing step's transaction, with
its history row, and the delivery job is sent after commit.

The token goes on at once: delivery is a job of its own (``operations/signal_deliveries``),
also for the throwing instance's own subscriptions, where Camunda 7 delivers synchronously
before the token moves on (docs/bpmn.md).
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.mappings import evaluate
from bpm.definitions.model import Node, ProcessGraph
from bpm.definitions.parse.patterns import MESSAGE_PATTERN
from bpm.dispatch import Job, JobName
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import calls, scopes
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.signal_names import picker
from bpm.errors import BpmError
from bpm.states import EngineEvent
from bpm.store import signals
from bpm.store.ids import new_id
from bpm.store.rows import TokenRow
from bpm.variables import check_variables

#: The incident of a throw whose name or variables could not be evaluated (a retry throws
#: again).
INCIDENT = "signal"


def throw_at(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> bool:
    """Broadcast ``node``'s signal from ``tok``; a ``${...}`` name and the ``in`` variables
    are evaluated over the token's variables first. False when that failed (no name, a bad
    expression or value): the token failed with an incident of kind ``signal`` (retried, the
    throw is evaluated again)."""
    assert node.signal is not None
    name: object = node.signal
    values: dict[str, Any] = {}
    try:
        if node.signal_expression is not None or node.signal_inputs:
            view = scopes.view(tx, g, tok)
            if node.signal_expression is not None:
                name = evaluate((node.signal_expression,), view)["signal"]
            given = calls.inputs(tx, g, tok, node.signal_inputs, view)
            values = check_variables(given, where=f"signal {name!r}")
    except BpmError as exc:
        fail_token(tx, tok, kind=INCIDENT, message=f"{node.id!r}: signal: {exc}")
        return False
    if not isinstance(name, str) or not MESSAGE_PATTERN.match(name):
        message = f"{node.id!r}: signal {node.signal!r} gave {name!r}, not a signal name"
        fail_token(tx, tok, kind=INCIDENT, message=message)
        return False
    throw(tx, tok, name, values)
    return True


def throw(tx: Tx, tok: TokenRow, name: str, values: dict[str, Any] | None = None) -> None:
    """Broadcast ``name`` (with ``values``) from ``tok``: every subscription that exists now
    receives it."""
    signal_id = new_id()
    thrower = (tok.instance_id, tok.id)
    pick = picker(tx, name)
    n = signals.throw(tx.conn, signal_id, name, values, tx.now, thrower=thrower, pick=pick)
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.SIGNAL_THROWN,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
        data={"signal": name, "signal_id": str(signal_id), "recipients": n},
    )
    if n:
        tx.jobs.append(Job(JobName.DELIVER_SIGNAL, {"signal_id": str(signal_id)}))
