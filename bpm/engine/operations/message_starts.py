"""Message start events: a correlation that no waiting token takes starts an instance of the
process whose latest version has a start event waiting for the message (as Camunda 7 does:
waiting executions first, then message start events; ``startMessagesOnly`` skips the first,
an instance id skips the second).

The start is the same as any other (``instances.create``, in the correlating transaction)
and is made once per start key: the idempotency key, else the business key, else the id of
the transport's message (a Celery message delivered twice), so a message sent again with the
same key returns the instance the first one started.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Tx
from bpm.engine.operations.lifecycle import start_key
from bpm.engine.semantics import instances as instance_rows
from bpm.store import definitions, instances, message_starts, tokens


@dataclass(frozen=True)
class MessageStarted:
    """The instance a message started (``created`` False: its start key had started it)."""

    instance_id: UUID
    token_id: UUID
    node_id: str
    created: bool


def start(
    core: EngineCore,
    tx: Tx,
    message: str,
    variables: dict[str, Any],
    *,
    business_key: str | None,
    idempotency_key: str | None,
    message_id: str | None,
    allowed: Collection[str] | None,
) -> MessageStarted | None:
    """Start an instance at the message start event that waits for ``message``; None when
    no process starts on it (or only one the caller may not start)."""
    found = [
        s for s in message_starts.listening(tx.conn, message) if allowed is None or s.key in allowed
    ]
    if not found:
        return None
    listening = found[0]  # a message starts one process (checked at deploy)
    row = definitions.by_id(tx.conn, listening.definition_id)
    assert row is not None, "a message start names a definition that exists"
    ikey = start_key(idempotency_key, business_key, message_id)
    if ikey is not None and (existing := instances.by_idempotency_key(tx.conn, row.key, ikey)):
        return MessageStarted(existing.id, _root(tx, existing.id), listening.node_id, False)
    graph = core.graph(row.id, tx.conn)
    made = instance_rows.create(
        tx,
        row,
        graph,
        variables,
        business_key=business_key,
        start_key=ikey,
        start_event=listening.node_id,
        message=message,
    )
    if made is None:  # a concurrent start took the key first
        existing = instances.by_idempotency_key(tx.conn, row.key, ikey or "")
        assert existing is not None
        return MessageStarted(existing.id, _root(tx, existing.id), listening.node_id, False)
    inst, root = made
    return MessageStarted(inst.id, root.id, listening.node_id, True)


def _root(tx: Tx, instance_id: UUID) -> UUID:
    rows = tokens.of_instance(tx.conn, instance_id)
    return next(
        (t.id for t in rows if t.parent_token_id is None), rows[0].id if rows else instance_id
    )
