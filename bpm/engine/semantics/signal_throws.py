"""A signal thrown by a token (an intermediate signal throw or signal end event): the signal
row and the snapshot of its recipients are written in the throwing step's transaction, with
its history row, and the delivery job is sent after commit.

The token goes on at once: delivery is a job of its own (``operations/signal_deliveries``),
also for the throwing instance's own subscriptions, where Camunda 7 delivers synchronously
before the token moves on (docs/bpmn.md).
"""

from __future__ import annotations

from uuid import uuid4

from bpm.dispatch import Job, JobName
from bpm.engine.core.tx import Tx
from bpm.states import EngineEvent
from bpm.store import signals
from bpm.store.rows import TokenRow


def throw(tx: Tx, tok: TokenRow, name: str) -> None:
    """Broadcast ``name`` from ``tok``: every subscription that exists now receives it."""
    signal_id = uuid4()
    n = signals.throw(tx.conn, signal_id, name, None, tx.now, thrower=(tok.instance_id, tok.id))
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
