"""Throwing a signal from outside a process (the API, ``bpm signal``, ``bpm.throw_signal``,
``POST /signal``): a broadcast to every subscription that exists when it is thrown.

The throw is one transaction: the signal row, the snapshot of its recipients (every token
that listens for it, the latest version of every process with a signal start event on it)
and its history row; the deliveries are then made in bounded batches by the delivery job
(``signal_deliveries``). A throw key (the request's message id) makes a request delivered
twice throw once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bpm.definitions.parse.patterns import MESSAGE_PATTERN
from bpm.dispatch import Job, JobName
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.semantics.signal_names import picker
from bpm.errors import InvalidOperation, NoMatchingWait
from bpm.limits import NAME_MAX, check_text
from bpm.states import EngineEvent
from bpm.store import signals
from bpm.store.ids import new_id
from bpm.variables import check_variables


@dataclass(frozen=True)
class Thrown:
    """The signal a throw made (``created`` False: its throw key had thrown it already) and
    how many recipients its snapshot found."""

    signal_id: UUID
    recipients: int
    created: bool = True


def throw(
    core: EngineCore,
    name: str,
    variables: Mapping[str, Any] | None = None,
    *,
    throw_key: str | None = None,
    token_id: UUID | None = None,
    process_keys: Collection[str] | None = None,
) -> Thrown:
    """Throw ``name``. ``token_id``: to that token's subscriptions only (Camunda's
    ``executionId``), refused when it has none; ``process_keys``: only instances and
    definitions of those processes (a caller allowed only those)."""
    if not isinstance(name, str) or not name:
        raise InvalidOperation("a signal needs a name")
    check_text(name, "the signal name", NAME_MAX)
    if not MESSAGE_PATTERN.match(name):
        raise InvalidOperation(
            f"signal name {name!r}: no control characters or spaces at either end"
        )
    checked = check_variables(variables, where=f"signal {name!r}") or {}

    def body() -> Thrown:
        with core.transaction("signal") as tx:
            if throw_key is not None and (known := signals.by_key(tx.conn, throw_key)):
                return Thrown(known, signals.left(tx.conn, known), False)
            signal_id = new_id()
            n = signals.throw(
                tx.conn,
                signal_id,
                name,
                checked,
                tx.now,
                throw_key=throw_key,
                only_token=token_id,
                process_keys=process_keys,
                pick=picker(tx, name),
            )
            if token_id is not None and n == 0:
                raise NoMatchingWait(f"token {token_id} does not listen for signal {name!r}")
            tx.history.engine(
                instance_id=None,
                at=tx.now,
                type=EngineEvent.SIGNAL_THROWN,
                actor=tx.actor,
                data={"signal": name, "signal_id": str(signal_id), "recipients": n},
            )
            if n:
                tx.jobs.append(Job(JobName.DELIVER_SIGNAL, {"signal_id": str(signal_id)}))
            return Thrown(signal_id, n)

    return core.retrying(body)
