"""Arming the timer starts of a scope's event subprocesses when the scope begins.

Apart from ``event_subprocesses`` because scheduling a timer may fail its token
(``waits.schedule``), and the failure path reaches the error handling that
``event_subprocesses`` serves: keeping arming here keeps the imports one way.
"""

from __future__ import annotations

from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import waits
from bpm.store.rows import TokenRow


def arm(tx: Tx, g: ProcessGraph, tok: TokenRow, start_event: Node) -> None:
    """``tok`` passes the start event of a scope: the timer starts of the scope's event
    subprocesses are armed, one SCHEDULED timer each, owned by the scope's host (the root
    token at process level, else the token waiting at the subprocess), so they are removed
    with the scope (``disarm``, and every path that cancels the host's timers)."""
    scope = start_event.scope
    esps = g.event_subprocesses.get(scope, ())
    timed = [g.trigger_of(e) for e in esps if g.trigger_of(e).timer is not None]
    if not timed:
        return
    host = tok if scope is None else tx.token(tok.parent_token_id) if tok.parent_token_id else None
    if host is None:
        return
    for trigger in timed:
        if not waits.schedule(tx, host, trigger, g.node(trigger.scope or "")):
            return
