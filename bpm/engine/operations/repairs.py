"""An operator's repairs: re-running a FAILED token (its task, its decision or its choice of
an outgoing flow), and resolving an incident by hand."""

from __future__ import annotations

from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Next, Tx
from bpm.engine.operations.lifecycle import OPERATOR
from bpm.engine.semantics import (
    calls,
    gateways,
    multi_instance,
    nodes,
    signal_throws,
    steps,
    task_moves,
)
from bpm.engine.semantics.cancelling import resolve_incidents
from bpm.engine.semantics.instance_state import resume_if_clear
from bpm.engine.semantics.moves import move
from bpm.errors import InvalidOperation, NotFound
from bpm.states import (
    EngineEvent,
    TaskEvent,
    TaskKind,
    TaskState,
    TokenEvent,
    TokenMode,
    TokenState,
    WaitKind,
)
from bpm.store import incidents, tasks
from bpm.store.rows import TokenRow

#: Incidents of a token that failed choosing an outgoing flow (its node's work is done).
LEAVING = frozenset({"no-path", "condition"})


def retry(core: EngineCore, token_or_task: UUID, retries: int | None = None) -> UUID:
    """Re-run a FAILED token: its task gets fresh attempts, its incident is resolved."""
    if retries is not None and retries < 1:
        raise InvalidOperation(f"retries must be at least 1, got {retries}")

    def run() -> tuple[UUID, Next]:
        with core.transaction(OPERATOR) as tx:
            tok = tx.token(token_or_task)
            if tok is None:
                task = tasks.get(tx.conn, token_or_task)
                tok = tx.token(task.token_id) if task else None
            if tok is None:
                raise NotFound(f"no token or task has id {token_or_task}")
            if tok.state != TokenState.FAILED:
                raise InvalidOperation(
                    f"token {tok.id} at {tok.node_id!r} is {tok.state}; "
                    f"only FAILED tokens can be retried"
                )
            return tok.id, _retry_txn(core, tx, tok, retries)

    token_id, nxt = core.retrying(run)
    core.send_next(nxt)
    return token_id


def _retry_txn(core: EngineCore, tx: Tx, tok: TokenRow, retries: int | None) -> Next:
    """The retry resolves the token's incident and may resume the instance: the instance's
    row is locked before anything changes (instance first). What runs again runs from where
    it failed: a task; a gateway's choice, a decision or a call (not the node's input mappings
    and start listeners, which ran); a choice of outgoing flow (not the node's work)."""
    tx.lock_instance(tok.instance_id)
    def_id, _, _ = core.info_for(tx, tok.instance_id)
    node = core.graph(def_id, tx.conn).node(tok.node_id)
    task = tasks.open_of_token(tx.conn, tok.id)
    kinds = {i.kind for i in incidents.open_of_token(tx.conn, tok.id)}
    if task is not None and task.state == TaskState.FAILED:
        policy = (
            node.compensation.retry
            if tok.mode == TokenMode.COMPENSATION and node.compensation
            else node.retry
        )
        attempts = retries or policy.max_attempts
        task_moves.change(
            tx,
            task,
            state=TaskState.READY,
            event=TaskEvent.RETRIED,
            data={"retries": attempts},
            retries=attempts,
            miss="conflict",
            message=f"task {task.id} changed during retry",
        )
        move(tx, tok, state=TokenState.WAITING, event=TokenEvent.RETRIED, wait_kind=WaitKind.TASK)
        if task.kind == TaskKind.HANDLER:
            tx.run_handler_later(task.id)
        else:
            tx.notify_topics.add(str(task.topic))
    elif multi_instance.INCIDENT in kinds:
        # A body that could not start its iterations starts them again; an iteration whose
        # completion condition or output element failed ends again.
        _retried(tx, tok)
        g = core.graph(def_id, tx.conn)
        moved = move(tx, tok, state=TokenState.ACTIVE, event=TokenEvent.RETRIED)
        if multi_instance.is_iteration(moved):
            return steps.carry_through(tx, g, nodes.leave(tx, g, moved, node))
        entered = multi_instance.enter(tx, g, moved, node)
        return steps.carry_through(tx, g, nodes.depart(tx, g, entered, node))
    elif (
        node.type.value == "exclusiveGateway"
        or "decision" in kinds
        or calls.INCIDENT in kinds
        or signal_throws.INCIDENT in kinds
        or kinds & LEAVING
    ):
        # Resolved first, so a second failure opens an incident of its own.
        _retried(tx, tok)
        g = core.graph(def_id, tx.conn)
        moved = move(tx, tok, state=TokenState.ACTIVE, event=TokenEvent.RETRIED)
        if kinds & LEAVING and node.type.value != "exclusiveGateway":
            return steps.carry_through(tx, g, gateways.leave_by_conditions(tx, g, moved, node))
        return steps.carry_through(tx, g, nodes.begin(tx, g, moved, node, armed=True))
    else:
        raise InvalidOperation(
            f"token {tok.id} failed at {node.type.value} {node.id!r}, which "
            f"cannot run again; cancel the instance instead"
        )
    _retried(tx, tok)
    return None


def _retried(tx: Tx, tok: TokenRow) -> None:
    """The token's incidents resolved, the retry in history, the instance running again if
    nothing else holds it."""
    resolve_incidents(tx, tok.id, "retried by an operator")
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.OPERATOR_RETRY,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
    )
    resume_if_clear(tx, tok.instance_id)


def resolve(core: EngineCore, incident_or_token: UUID, note: str | None = None) -> UUID:
    """Mark an open incident resolved without re-running anything: the operator fixed it by
    hand (a compensation that failed, say). Returns the token the incident belonged to."""

    def run() -> UUID:
        with core.transaction(OPERATOR) as tx:
            incident = incidents.get(tx.conn, incident_or_token)
            token_id = incident.token_id if incident is not None else incident_or_token
            if token_id is None or not incidents.open_of_token(tx.conn, token_id):
                raise NotFound(
                    f"no open incident has id {incident_or_token}, and no token with "
                    f"that id has one"
                )
            tok = tx.token(token_id)
            assert tok is not None
            tx.lock_instance(tok.instance_id)  # instance first
            resolve_incidents(tx, tok.id, note or "resolved by an operator")
            tx.history.engine(
                instance_id=tok.instance_id,
                at=tx.now,
                type=EngineEvent.OPERATOR_RESOLVED,
                node_id=tok.node_id,
                token_id=tok.id,
                actor=tx.actor,
                data={"note": note},
            )
            return tok.id

    return core.retrying(run)
