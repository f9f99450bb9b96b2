"""Delivering a thrown signal: one bounded batch of its snapshotted recipients per
transaction, each delivery row deleted in the transaction that makes it, so a recipient
receives the signal once however often the job runs (a duplicate job's claim skips the rows
another holds, and finds the ones it made gone).

Each delivery re-checks the subscription under the token's version: a token that moved
since the throw (it left the catch event, the activity, the gateway, or something moved it
there) is skipped, as Camunda 7 delivers only to subscriptions that still exist. The
process's own signal event subprocesses listen for as long as the instance runs, so a
delivery to the root token for one asks only whether the scope still listens. A signal
start event starts an instance of the definition the snapshot chose (the latest version
when the signal was thrown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Next, NextToken, Tx
from bpm.engine.semantics import boundary_events, event_gateways, event_subprocesses
from bpm.engine.semantics import instances as instance_rows
from bpm.engine.semantics.event_gateway_wins import signal_won
from bpm.engine.semantics.message_arrivals import signalled
from bpm.engine.semantics.message_boundaries import armed
from bpm.engine.semantics.nodes import leave
from bpm.engine.semantics.tree import Tree
from bpm.states import LIVE_TOKEN, SignalTarget, TokenEvent, TokenState, WaitKind
from bpm.store import definitions, signals
from bpm.store.rows import TokenRow
from bpm.store.signals import Delivery, SignalRow

#: Deliveries per transaction unless the runtime says otherwise (``BPM_SIGNAL_BATCH``).
BATCH = 200


@dataclass(frozen=True)
class Batch:
    """What one run did: deliveries made, skipped (the subscription was gone), and whether
    rows are left for a fresh run (False also when other runs hold all that is left)."""

    delivered: int
    skipped: int
    more: bool


def deliver(core: EngineCore, signal_id: UUID, batch: int = BATCH) -> Batch:
    def body() -> tuple[Batch, list[Next]]:
        nexts: list[Next] = []
        with core.transaction("signal") as tx:
            sig = signals.get(tx.conn, signal_id)
            if sig is None or sig.finished_at is not None:
                return Batch(0, 0, False), []
            claimed = signals.claim(tx.conn, signal_id, max(1, batch))
            core.know_instances(tx, [d.instance_id for d in claimed if d.instance_id])
            made = 0
            for d in claimed:
                if d.kind is SignalTarget.START:
                    nexts.append(_start(core, tx, sig, d))
                    made += 1
                    continue
                got = _to_token(core, tx, sig, d)
                made += bool(got)
                nexts.extend(got)
            left = signals.done(tx.conn, signal_id, [d.target for d in claimed], tx.now)
        return Batch(made, len(claimed) - made, left and bool(claimed)), nexts

    result, nexts = core.retrying(body)
    for nxt in nexts:
        core.send_next(nxt)
    return result


def _start(core: EngineCore, tx: Tx, sig: SignalRow, d: Delivery) -> Next:
    row = definitions.by_id(tx.conn, d.target)
    if row is None or d.node_id is None:
        return None  # the definition was deleted since the throw
    graph = core.graph(row.id, tx.conn)
    made = instance_rows.create(
        tx,
        row,
        graph,
        dict(sig.variables or {}),
        business_key=None,
        start_key=None,
        start_event=d.node_id,
    )
    assert made is not None, "a start without a start key always makes its instance"
    _, root = made
    signalled(tx, graph, root, d.node_id, sig.name, None)
    return NextToken(root.id, 0)


def _to_token(core: EngineCore, tx: Tx, sig: SignalRow, d: Delivery) -> list[Next]:
    tok = tx.token(d.target)
    if tok is None or tok.state not in LIVE_TOKEN:
        return []
    g = core.graph_of(tx, tok.instance_id)
    values = dict(sig.variables or {})
    same = tok.version == d.token_version
    out = _at_token(tx, g, tok, sig.name, values) if same else []
    if g.event_subprocesses:
        out.extend(_event_subprocesses(tx, g, tx.current(tok), sig.name, values, same=same))
    return out


def _at_token(
    tx: Tx, g: ProcessGraph, tok: TokenRow, name: str, values: dict[str, Any]
) -> list[Next]:
    """A signal catch the token waits at, the signal event after the gateway it waits at, or
    the signal boundaries of the activity it works at."""
    node = g.node(tok.node_id)
    if tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.SIGNAL:
        if node.signal != name:
            return []
        signalled(tx, g, tok, node.id, name, values)
        return [leave(tx, g, tok, node)]
    if tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.EVENT:
        for event in event_gateways.events_after(g, node):
            if event.signal == name:
                return [signal_won(tx, g, tok, event, name, values)]
        return []
    out: list[Next] = []
    for boundary in armed(g, tok):
        if boundary.signal != name:
            continue
        tok = tx.current(tok)
        signalled(tx, g, tok, boundary.id, name, values)
        if boundary.interrupting:
            how = TokenEvent.SIGNAL_RECEIVED
            out.append(boundary_events.interrupt(tx, g, tok, boundary, how, "signal"))
            break
        out.append(boundary_events.spawn(tx, tok, boundary))
    return out


def _event_subprocesses(
    tx: Tx, g: ProcessGraph, tok: TokenRow, name: str, values: dict[str, Any], *, same: bool
) -> list[Next]:
    """The signal event subprocesses ``tok`` hosts: the process's (``tok`` is the root), any
    time while the instance runs; a subprocess's, only if ``tok`` has not moved (``same``)."""
    out: list[Next] = []
    started_here: set[str] = set()
    while True:
        tree = Tree.read(tx, tok.instance_id)
        found = [
            s
            for s in event_subprocesses.subscriptions(g, tree)
            if s.host.id == tok.id
            and g.trigger_of(s.esp.id).signal == name
            and (s.scope is None or same)
            and s.esp.id not in started_here
        ]
        if not found:
            return out
        sub = found[0]
        started_here.add(sub.esp.id)
        started = event_subprocesses.start(tx, g, tree, sub, TokenEvent.MOVED, {"signal": name})
        at = started.row if started.row is not None else tx.token(started.token_id)
        assert at is not None
        signalled(tx, g, at, g.trigger_of(sub.esp.id).id, name, values)
        out.append(started)
        if g.trigger_of(sub.esp.id).interrupting:
            return out
