"""Cancelling an instance whose process has ``end`` listeners: Camunda 7 runs them when an
instance is cancelled as when it completes, so the cancel ends every path and the root
token's work, and the root token waits while they run (each a step of its own, as every
listener here); once the last is done the instance is CANCELLED.

Apart from ``lifecycle.cancel`` (an operation) because the listeners' end is a step of the
semantics (``nodes.listener_done`` hands it here), and apart from ``nodes`` because the
cancel's end leads nowhere a node's would.
"""

from __future__ import annotations

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import listeners, records
from bpm.engine.semantics.cancelling import cancel_token, end_work
from bpm.engine.semantics.instance_state import resume_if_clear, set_instance_state
from bpm.engine.semantics.moves import move
from bpm.states import LIVE_TOKEN, InstanceState, TokenEvent, TokenState
from bpm.store import tasks
from bpm.store.rows import TokenRow

_REASON = "cancelled by an operator; the process's end listeners ran"


def listening_root(tx: Tx, g: ProcessGraph, tokens: list[TokenRow]) -> TokenRow | None:
    """The root token that is to run the process's end listeners as the instance is
    cancelled; None when there are none, or when they already run for a cancel (a second
    cancel then ends the instance at once)."""
    if not g.end_listeners:
        return None
    root = next((t for t in tokens if t.parent_token_id is None), None)
    if root is None or root.state not in LIVE_TOKEN:
        return None
    task = tasks.open_of_token(tx.conn, root.id)
    step = listeners.step_of(g, task) if task is not None else None
    return None if step is not None and step.cancelling else root


def cancel_listening(tx: Tx, g: ProcessGraph, root: TokenRow, reason: str) -> None:
    """Every other live token cancelled, the root token's work ended where it is, and the
    first end listener to run under it (its job sent at commit)."""
    for tok in tx.tokens_of(root.instance_id):
        if tok.id != root.id and tok.state in LIVE_TOKEN:
            cancel_token(tx, tok, reason)
    end_work(tx, root, reason)
    ran = listeners.run_process_end(tx, g, tx.current(root), cancelling=True)
    tx.run_handler_later(ran.task_id)
    resume_if_clear(tx, root.instance_id)  # a FAILED instance's incidents all went with it


def cancel_listener_done(tx: Tx, g: ProcessGraph, root: TokenRow, step: listeners.Step) -> Next:
    """The next end listener of a cancel, or, after the last, the instance CANCELLED."""
    following = step.index + 1
    if following < len(g.end_listeners):
        return listeners.run_process_end(tx, g, root, following, cancelling=True)
    # its work ended at the cancel; its one task, the listener's, is done in this step
    records.cut_short(tx, root, _REASON)
    move(tx, root, state=TokenState.CANCELLED, event=TokenEvent.CANCELLED, data={"reason": _REASON})
    set_instance_state(tx, root.instance_id, InstanceState.CANCELLED)
    return None
