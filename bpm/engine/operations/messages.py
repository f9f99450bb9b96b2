"""Message correlation: wake the tokens waiting for a named message.

A correlation names the instance (by id or business key); a message that no token waits for
is an error the caller sees, never a silent drop, and one that several tokens wait for is an
error unless the caller asks for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import scopes
from bpm.engine.semantics.nodes import leave
from bpm.errors import AmbiguousCorrelation, InvalidOperation, NoMatchingWait
from bpm.states import EngineEvent, InstanceState, TokenState, WaitKind
from bpm.store import instances
from bpm.store.rows import TokenRow
from bpm.variables import check_variables

#: How many instances one business key may select before the correlation is refused.
MAX_INSTANCES = 1000


def correlate(
    core: EngineCore,
    message: str,
    business_key: str | None = None,
    instance_id: UUID | None = None,
    values: Mapping[str, Any] | None = None,
    *,
    all_waiting: bool = False,
) -> list[UUID]:
    """Move every matching WAITING token on; returns their ids."""
    if not isinstance(message, str) or not message:
        raise InvalidOperation("a correlation needs a message name")
    if business_key is None and instance_id is None:
        raise InvalidOperation(f"correlating {message!r} needs a business key or an instance id")
    checked = check_variables(values, where=f"correlation of {message!r}")
    target = (
        f"instance {instance_id}" if instance_id is not None else f"business key {business_key!r}"
    )

    def body() -> tuple[list[UUID], list[Next]]:
        with core.transaction("message") as tx:
            waiting = _waiting(core, tx, message, business_key, instance_id)
            if not waiting:
                raise NoMatchingWait(f"no token of {target} waits for message {message!r}")
            if len(waiting) > 1 and not all_waiting:
                raise AmbiguousCorrelation(
                    f"{len(waiting)} tokens of {target} wait for message {message!r}; name the "
                    f"instance, or correlate to all of them"
                )
            results = []
            for tok in waiting:
                g = core.graph_of(tx, tok.instance_id)
                scopes.write(tx, g, tok, checked)
                tx.history.engine(
                    instance_id=tok.instance_id,
                    at=tx.now,
                    type=EngineEvent.MESSAGE_CORRELATED,
                    node_id=tok.node_id,
                    token_id=tok.id,
                    actor=tx.actor,
                    data={"message": message, "variables": checked or None},
                )
                results.append(leave(tx, g, tok, g.node(tok.node_id)))
        return [t.id for t in waiting], results

    woken, nexts = core.retrying(body)
    for nxt in nexts:
        core.send_next(nxt)
    return woken


def _waiting(
    core: EngineCore, tx: Tx, message: str, business_key: str | None, instance_id: UUID | None
) -> list[TokenRow]:
    if instance_id is not None:
        row = instances.get(tx.conn, instance_id)
        candidates = [row] if row is not None else []
    else:
        candidates = instances.search(tx.conn, business_key=business_key, limit=MAX_INSTANCES)
    out: list[TokenRow] = []
    for inst in candidates:
        if inst.state not in (
            InstanceState.RUNNING,
            InstanceState.FAILED,
        ):  # FAILED: another branch has an incident
            continue
        g = core.graph(inst.process_def_id, tx.conn)
        for tok in tx.tokens_of(inst.id):
            if (
                tok.state == TokenState.WAITING
                and tok.wait_kind == WaitKind.MESSAGE
                and g.node(tok.node_id).message == message
            ):
                out.append(tok)
    return out
