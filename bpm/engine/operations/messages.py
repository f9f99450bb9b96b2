"""Message correlation: wake the tokens waiting for a named message.

A correlation names the instance (by id or business key), or none, and then goes to whichever
instance waits for the message; a message that no token waits for (and no start event takes)
is an error the caller sees, never a silent drop, and one that several tokens wait for is an
error unless the caller asks for all of them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack
from uuid import UUID

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Next, NextToken, Tx
from bpm.engine.operations import message_listeners, message_starts
from bpm.engine.semantics import (
    event_gateway_wins,
    event_gateways,
    event_subprocesses,
    message_boundaries,
)
from bpm.engine.semantics.message_arrivals import arrived
from bpm.engine.semantics.nodes import leave
from bpm.engine.semantics.tree import Tree
from bpm.errors import AmbiguousCorrelation, InvalidOperation, NoMatchingWait
from bpm.limits import NAME_MAX, check_text
from bpm.states import InstanceState, TokenEvent, TokenState, WaitKind
from bpm.store import instances, variables
from bpm.store.rows import TokenRow
from bpm.variables import check_variables

#: What a message can reach: a token waiting for it, an event subprocess that starts on it,
#: a message boundary event on the activity a token works at, a message event after the
#: event-based gateway a token waits at.
Waiting = (
    TokenRow
    | event_subprocesses.Subscription
    | message_boundaries.BoundarySubscription
    | event_gateways.GatewaySubscription
)
#: How many instances one correlation may select (by business key, or as those listening
#: for its message) before it is refused: a correlation is one transaction.
MAX_INSTANCES = 1000


class CorrelateOptions(TypedDict, total=False):
    """Which tokens a message is for, and what it sets (``correlate_tokens``)."""

    business_key: str | None
    instance_id: UUID | None
    variables: Mapping[str, Any] | None
    all_waiting: bool
    correlation_keys: Mapping[str, Any] | None
    #: Only instances of these process keys (a caller allowed only those): an instance of
    #: another process is passed over as if it did not exist, so it neither blocks the
    #: caller's own correlation nor tells the caller it is there.
    process_keys: Collection[str] | None
    #: Only a message start event may take it (Camunda's ``startMessagesOnly``).
    start_messages_only: bool
    #: A message start makes its instance once per this key (else per business key, else
    #: per the id of the transport's message that carried the correlation).
    idempotency_key: str | None
    message_id: str | None


@dataclass(frozen=True)
class Correlated:
    """A token a message moved on, and its instance; or (``started``) the instance a
    message start event began, and its root token."""

    token_id: UUID
    instance_id: UUID
    node_id: str
    started: bool = False


def correlate(
    core: EngineCore,
    message: str,
    business_key: str | None = None,
    instance_id: UUID | None = None,
    values: Mapping[str, Any] | None = None,
    *,
    all_waiting: bool = False,
    correlation_keys: Mapping[str, Any] | None = None,
) -> list[UUID]:
    """Move every matching WAITING token on; returns their ids."""
    found = correlate_tokens(
        core,
        message,
        business_key=business_key,
        instance_id=instance_id,
        variables=values,
        all_waiting=all_waiting,
        correlation_keys=correlation_keys,
    )
    return [c.token_id for c in found]


def correlate_tokens(
    core: EngineCore, message: str, **options: Unpack[CorrelateOptions]
) -> list[Correlated]:
    """Move every matching WAITING token on. ``correlation_keys``: instance variables that
    must each equal the given value (a JSON value, compared exactly) for a token to match."""
    business_key, instance_id = options.get("business_key"), options.get("instance_id")
    values, all_waiting = options.get("variables"), options.get("all_waiting", False)
    correlation_keys = options.get("correlation_keys")
    if not isinstance(message, str) or not message:
        raise InvalidOperation("a correlation needs a message name")
    check_text(message, "the message name", NAME_MAX)
    check_text(business_key, "the business key", NAME_MAX)
    idempotency_key = options.get("idempotency_key")
    check_text(idempotency_key, "the idempotency key", NAME_MAX)
    start_only = options.get("start_messages_only", False)
    if start_only and instance_id is not None:
        raise InvalidOperation(
            f"correlating {message!r}: an instance id and start messages only exclude each other"
        )
    checked = check_variables(values, where=f"correlation of {message!r}")
    target = (
        f"instance {instance_id}"
        if instance_id is not None
        else f"business key {business_key!r}"
        if business_key is not None
        else "any instance"
    )

    keys = dict(correlation_keys or {})
    allowed = options.get("process_keys")

    def body() -> tuple[list[Correlated], list[Next]]:
        found: list[Correlated] = []
        with core.transaction("message") as tx:
            waiting = (
                []
                if start_only
                else _waiting(core, tx, message, (business_key, instance_id), keys, allowed)
            )
            if not waiting and instance_id is None:
                began = message_starts.start(
                    core,
                    tx,
                    message,
                    checked,
                    business_key=business_key,
                    idempotency_key=idempotency_key,
                    message_id=options.get("message_id"),
                    allowed=allowed,
                )
                if began is not None:
                    moved = Correlated(began.token_id, began.instance_id, began.node_id, True)
                    return [moved], [NextToken(began.token_id, 0)] if began.created else []
            if not waiting:
                raise NoMatchingWait(_nothing_waits(message, target, business_key, instance_id))
            if len(waiting) > 1 and not all_waiting:
                raise AmbiguousCorrelation(
                    f"{len(waiting)} tokens of {target} wait for message {message!r}; name the "
                    f"instance, or correlate to all of them"
                )
            results: list[Next] = []
            for tok in waiting:
                g = core.graph_of(tx, tok.instance_id)
                moved, nxt = _deliver(tx, g, tok, message, checked)
                found.append(moved)
                results.append(nxt)
        return found, results

    woken, nexts = core.retrying(body)
    for nxt in nexts:
        core.send_next(nxt)
    return woken


def _deliver(
    tx: Tx, g: ProcessGraph, tok: Waiting, message: str, checked: dict[str, Any] | None
) -> tuple[Correlated, Next]:
    """The message reaches one of what waits for it."""
    values = checked or {}
    if isinstance(tok, event_gateways.GatewaySubscription):
        nxt = event_gateway_wins.message_won(tx, g, tok, message, values)
        return Correlated(tok.token.id, tok.token.instance_id, tok.event.id), nxt
    if isinstance(tok, message_boundaries.BoundarySubscription):
        nxt = message_boundaries.fire(tx, g, tok, message, values)
        return Correlated(tok.token.id, tok.token.instance_id, tok.boundary.id), nxt
    if isinstance(tok, event_subprocesses.Subscription):
        started = _start(tx, g, tok, message, checked)
        return Correlated(started.token_id, tok.host.instance_id, tok.esp.id), started
    arrived(tx, g, tok, tok.node_id, message, checked)
    return Correlated(tok.id, tok.instance_id, tok.node_id), leave(tx, g, tok, g.node(tok.node_id))


def _nothing_waits(
    message: str, target: str, business_key: str | None, instance_id: UUID | None
) -> str:
    if business_key is None and instance_id is None:
        return f"no process starts with message {message!r}, and no instance waits for it"
    return f"no token of {target} waits for message {message!r}"


def _waiting(
    core: EngineCore,
    tx: Tx,
    message: str,
    target: tuple[str | None, UUID | None],
    keys: dict[str, Any],
    allowed: Collection[str] | None,
) -> list[Waiting]:
    """The tokens waiting for ``message`` in the instance, or the instances of the business
    key, of ``target``; read in the correlating transaction, so a caller limited to
    ``allowed`` processes sees only instances of those, as they stand now."""
    business_key, instance_id = target
    if instance_id is not None:
        row = instances.get(tx.conn, instance_id)
        candidates = [row] if row is not None else []
    elif business_key is not None:
        candidates = instances.search(
            tx.conn, business_key=business_key, keys=allowed, limit=MAX_INSTANCES + 1
        )
    else:
        candidates = message_listeners.instances_listening(
            core, tx, message, allowed, MAX_INSTANCES + 1
        )
    if len(candidates) > MAX_INSTANCES:
        where = "of that business key" if business_key is not None else "listening for it"
        raise InvalidOperation(
            f"correlating {message!r}: more than {MAX_INSTANCES} instances {where}; narrow "
            f"the correlation with correlation keys or a business key"
        )
    out: list[Waiting] = []
    for inst in candidates:
        if inst.state not in (
            InstanceState.RUNNING,
            InstanceState.FAILED,
        ):  # FAILED: another branch has an incident
            continue
        if allowed is not None and inst.process_key not in allowed:
            continue
        if keys and not _matches(variables.load(tx.conn, inst.id, list(keys)), keys):
            continue
        g = core.graph(inst.process_def_id, tx.conn)
        rows = tx.tokens_of(inst.id)
        for tok in rows:
            if (
                tok.state == TokenState.WAITING
                and tok.wait_kind == WaitKind.MESSAGE
                and g.node(tok.node_id).message == message
            ):
                out.append(tok)
        out.extend(message_boundaries.subscriptions(g, rows, message))
        out.extend(event_gateways.subscriptions(g, rows, message))
        if g.event_subprocesses:
            tree = Tree.read(tx, inst.id)
            out.extend(event_subprocesses.message_subscriptions(g, tree, message))
    return out


def _start(
    tx: Tx,
    g: ProcessGraph,
    sub: event_subprocesses.Subscription,
    message: str,
    checked: Mapping[str, Any] | None,
) -> NextToken:
    """A message starts an event subprocess: its variables are written from the new token
    (at the event subprocess, so to the nearest scope that has them, else the instance)."""
    tree = Tree.read(tx, sub.host.instance_id)
    data = {"message": message}
    started = event_subprocesses.start(tx, g, tree, sub, TokenEvent.MOVED, data)
    at = started.row if started.row is not None else tx.token(started.token_id)
    assert at is not None
    arrived(tx, g, at, g.trigger_of(sub.esp.id).id, message, checked)
    return started


def _matches(found: dict[str, Any], keys: dict[str, Any]) -> bool:
    """Each key is a variable of the instance with that JSON value: true is not 1, the
    string "5" is not the number 5, but 5 and 5.0 are the same number."""
    return all(name in found and _same(found[name], want) for name, want in keys.items())


def _same(a: Any, b: Any) -> bool:
    if _number(a) and _number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)
