"""A message arriving at a token: its variables are written from the token (to the nearest
scope that has each name, else the instance) and ``MessageCorrelated`` is recorded at the
element that received it, whatever received it (a receive task or message event, a message
boundary event, an event after an event-based gateway, an event subprocess's start). A
broadcast signal arrives the same way, recorded as ``SignalReceived`` (``signalled``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import scopes
from bpm.states import EngineEvent
from bpm.store.rows import TokenRow


def arrived(
    tx: Tx,
    g: ProcessGraph,
    tok: TokenRow,
    node_id: str,
    message: str,
    values: Mapping[str, Any] | None,
) -> None:
    _received(tx, g, tok, node_id, EngineEvent.MESSAGE_CORRELATED, {"message": message}, values)


def signalled(
    tx: Tx,
    g: ProcessGraph,
    tok: TokenRow,
    node_id: str,
    signal: str,
    values: Mapping[str, Any] | None,
) -> None:
    _received(tx, g, tok, node_id, EngineEvent.SIGNAL_RECEIVED, {"signal": signal}, values)


def _received(
    tx: Tx,
    g: ProcessGraph,
    tok: TokenRow,
    node_id: str,
    kind: EngineEvent,
    what: dict[str, Any],
    values: Mapping[str, Any] | None,
) -> None:
    """What arrived is written from the receiving token, with its history row."""
    scopes.write(tx, g, tok, dict(values or {}))
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=kind,
        node_id=node_id,
        token_id=tok.id,
        actor=tx.actor,
        data={**what, "variables": dict(values or {}) or None},
    )
