"""What happens when a token is ACTIVE at a node.

Each function runs inside one transaction that moves exactly one existing token, and returns
what the job should do next (go on with a token, run a task, or stop).
"""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID, uuid4

from bpm.definitions.model import ACTIVITIES, Flow, Node, NodeType, ProcessGraph
from bpm.engine import sagas, waits
from bpm.engine.bpmn_errors import throw_from_end
from bpm.engine.failures import (
    below,
    cancel_inside,
    cancel_timers,
    end_work,
    fail_token,
    resume_if_clear,
    set_instance_state,
)
from bpm.engine.moves import create, move, new_token
from bpm.engine.tx import Conflict, Next, NextToken, RunTask, Tx
from bpm.errors import ExpressionEvalError, MissingVariable
from bpm.expressions import evaluate_condition
from bpm.states import (
    EngineEvent,
    InstanceState,
    TaskEvent,
    TaskKind,
    TaskState,
    TokenEvent,
    TokenMode,
    TokenState,
    WaitKind,
)
from bpm.store import tokens
from bpm.store.rows import TaskRow, TokenRow


def arrive(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    node = g.node(tok.node_id)
    if tok.mode == TokenMode.COMPENSATION:
        return _enter_compensation(tx, g, tok, node)
    if node.type in ACTIVITIES:
        result = _enter_activity(tx, g, tok, node)
        if g.timer_boundaries(node.id):
            current = tx.current(tok)
            if current.state == TokenState.WAITING:
                waits.arm_boundaries(tx, g, current, node)
        return result
    return _pass(tx, g, tok, node)


def _enter_activity(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    kind = node.type
    if kind is NodeType.SERVICE_TASK:
        if node.topic is not None:
            return _create_external_task(tx, tok, node)
        return _create_handler_task(tx, tok, node)
    if kind is NodeType.USER_TASK:
        return waits.create_user_task(tx, tok, node)
    if kind is NodeType.RECEIVE_TASK:
        return waits.wait_for_message(tx, tok, node)
    return _enter_subprocess(tx, g, tok, node)


def _enter_compensation(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """A COMPENSATION token at the activity it undoes: create the compensation's task, as
    the activity would its own (handler, topic, or the handler activity's task)."""
    spec = node.compensation
    assert spec is not None, f"{node.id!r} has no compensation"
    if spec.node is not None:
        handler = g.node(spec.node)
        stand_in = replace(handler, id=node.id, retry=spec.retry, compensation=None)
    else:
        stand_in = replace(
            node,
            type=NodeType.SERVICE_TASK,
            handler=spec.handler,
            topic=spec.topic,
            retry=spec.retry,
            compensation=None,
        )
    return _enter_activity(tx, g, tok, stand_in)


def _pass(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    kind = node.type
    if kind is NodeType.COMPENSATION_THROW or (kind is NodeType.END and node.compensate):
        return sagas.throw(tx, g, tok, node)
    if kind is NodeType.TIMER:
        return waits.wait_for_timer(tx, tok, node)
    if kind is NodeType.MESSAGE:
        return waits.wait_for_message(tx, tok, node)
    if kind is NodeType.EXCLUSIVE:
        return _exclusive(tx, g, tok, node)
    if kind is NodeType.PARALLEL:
        if node.is_join:
            return _park_at_join(tx, g, tok)
        return fork_or_leave(tx, g, tok, node)
    if kind is NodeType.END:
        return _end_event(tx, g, tok, node)
    return leave(tx, g, tok, node)  # startEvent, task, manualTask, boundaryEvent: pass through


def leave(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """Move along the node's single outgoing flow; with none, the path ends here (as Camunda).

    Leaving an activity disarms its boundary timers in the same transaction, and an activity
    that declares a compensation gets its record. A COMPENSATION token leaving is
    its compensation done.
    """
    if tok.mode == TokenMode.COMPENSATION:
        return sagas.compensated(tx, tok)
    if node.compensation is not None:
        sagas.record_success(tx, tok, node)
    if g.timer_boundaries(node.id):
        cancel_timers(tx, tok, reason=f"left {node.id!r}")
    flows = g.outgoing(node.id)
    if not flows:
        return end_token(tx, tok, g)
    return take(tx, tok, flows[0])


def take(tx: Tx, tok: TokenRow, flow: Flow, event: str = "MOVED") -> NextToken:
    moved = move(
        tx,
        tok,
        state=TokenState.ACTIVE,
        event=event,
        node_id=flow.target,
        via_flow=flow.id,
        data={"from": flow.source, "flow": flow.id},
    )
    return NextToken(moved.id, moved.version, moved)


def fork_or_leave(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    flows = g.outgoing(node.id)
    if len(flows) == 1:
        return take(tx, tok, flows[0])
    if tok.concurrent:
        # A branch that forks again ends and hands over to new siblings under the same scope
        # token, so every join counts the tokens of one scope (Camunda 7's execution tree).
        move(
            tx,
            tok,
            state=TokenState.COMPLETED,
            event=TokenEvent.FORKED,
            data={"into": [f.id for f in flows]},
        )
        parent = tok.parent_token_id
    else:
        move(
            tx,
            tok,
            state=TokenState.WAITING,
            event=TokenEvent.FORKED,
            wait_kind=WaitKind.CHILDREN,
            data={"into": [f.id for f in flows]},
        )
        parent = tok.id
    children = [
        new_token(
            tx,
            instance_id=tok.instance_id,
            node_id=f.target,
            parent=parent,
            scope_id=tok.scope_id,
            concurrent=True,
            via_flow=f.id,
        )
        for f in flows
    ]
    create(tx, children, [(tok.id, c.id, "FORK") for c in children])
    for child in children[1:]:
        tx.advance_later(child.id, 0)
    return NextToken(children[0].id, 0)


def _exclusive(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    flows = g.outgoing(node.id)
    values = tx.load_variables(tok.instance_id)
    for flow in flows:
        if flow.id == node.default_flow:
            continue
        if flow.condition is None:
            return take(tx, tok, flow)
        try:
            if evaluate_condition(flow.condition, values):
                return take(tx, tok, flow)
        except MissingVariable as exc:
            message = (
                f"gateway {node.id!r}: condition of flow {flow.id!r} reads variable "
                f"{exc.name!r}, which the instance does not have"
            )
            fail_token(tx, tok, kind="condition", message=message, details=str(exc))
            return None
        except ExpressionEvalError as exc:
            message = f"gateway {node.id!r}: condition of flow {flow.id!r} failed: {exc}"
            fail_token(tx, tok, kind="condition", message=message)
            return None
    if node.default_flow is not None:
        return take(tx, tok, g.flows[node.default_flow])
    fail_token(
        tx,
        tok,
        kind="no-path",
        message=f"gateway {node.id!r}: no condition is true and there is no default flow",
    )
    return None


def _park_at_join(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """Wait at the join, then let the parent decide."""
    if not tok.concurrent and g.spawns_tokens and _live_children(tx, tok):
        return _join_as_scope(tx, tok)
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.ARRIVED_AT_JOIN,
        wait_kind=WaitKind.JOIN,
        data={"via": tok.via_flow},
    )
    if tok.parent_token_id is None:
        return None  # a lone token at a join waits forever, as in BPMN
    parent = tokens.get(tx.conn, tok.parent_token_id)
    if parent is None or parent.state != TokenState.WAITING:
        return None
    return NextToken(parent.id, parent.version)


def _live_children(tx: Tx, tok: TokenRow) -> bool:
    """Whether ``tok`` has live children, counting the moves this transaction made."""
    tx.flush_tokens()
    return bool(tokens.live_children(tx.conn, tok.id))


def _join_as_scope(tx: Tx, tok: TokenRow) -> Next:
    """A scope's own token reaches a join while tokens that a non-interrupting boundary spawned
    under it are still running: like Camunda's execution tree, it becomes the scope (WAITING
    for its children) and a concurrent stand-in arrives at the join in its place, so the join
    counts it together with the spawned tokens."""
    scope = move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.WAITING,
        wait_kind=WaitKind.CHILDREN,
        data={"join": tok.node_id, "as": "scope"},
    )
    stand_in = new_token(
        tx,
        instance_id=tok.instance_id,
        node_id=tok.node_id,
        parent=tok.id,
        scope_id=tok.scope_id,
        concurrent=True,
        via_flow=tok.via_flow,
    )
    create(tx, [stand_in], [(tok.id, stand_in.id, "FORK")])
    move(
        tx,
        stand_in,
        state=TokenState.WAITING,
        event=TokenEvent.ARRIVED_AT_JOIN,
        wait_kind=WaitKind.JOIN,
        data={"via": stand_in.via_flow},
    )
    return NextToken(scope.id, scope.version)


def _create_external_task(tx: Tx, tok: TokenRow, node: Node) -> Next:
    """READY for a worker's fetch-and-lock; waiting workers are woken when it commits."""
    move(tx, tok, state=TokenState.WAITING, event=TokenEvent.WAITING, wait_kind=WaitKind.TASK)
    task = TaskRow(
        uuid4(),
        tok.id,
        tok.instance_id,
        node.id,
        node.topic,
        None,
        TaskKind.EXTERNAL,
        TaskState.READY,
        node.retry.max_attempts,
        0,
        None,
        None,
        None,
        None,
        None,
        node.priority,
        0,
        tx.now,
        tx.now,
    )
    tx.insert_task(task)
    tx.history.task(
        instance_id=tok.instance_id,
        task_id=task.id,
        token_id=tok.id,
        at=tx.now,
        type=TaskEvent.CREATED,
        node_id=node.id,
        from_state=None,
        to_state=TaskState.READY,
        actor=tx.actor,
        data={"topic": node.topic, "max_attempts": node.retry.max_attempts},
    )
    tx.notify_topics.add(str(node.topic))
    return None


def _create_handler_task(tx: Tx, tok: TokenRow, node: Node) -> Next:
    waiting = move(
        tx, tok, state=TokenState.WAITING, event=TokenEvent.WAITING, wait_kind=WaitKind.TASK
    )
    task = TaskRow(
        uuid4(),
        tok.id,
        tok.instance_id,
        node.id,
        None,
        node.handler,
        TaskKind.HANDLER,
        TaskState.READY,
        node.retry.max_attempts,
        0,
        None,
        None,
        None,
        None,
        None,
        node.priority,
        0,
        tx.now,
        tx.now,
    )
    tx.history.task(
        instance_id=tok.instance_id,
        task_id=task.id,
        token_id=tok.id,
        at=tx.now,
        type=TaskEvent.CREATED,
        node_id=node.id,
        from_state=None,
        to_state=TaskState.READY,
        actor=tx.actor,
        data={"handler": node.handler, "max_attempts": node.retry.max_attempts},
    )
    if not tx.runs_inline(node.handler or ""):
        tx.insert_task(task)
        return RunTask(task.id)
    # This process runs the handler right after commit: lock it in this same transaction.
    locked = replace(
        task,
        state=TaskState.LOCKED,
        lock_owner=tx.actor,
        attempts=1,
        retries=task.retries - 1,
        lock_expire_at=tx.now + node.timeout,
        version=1,
    )
    tx.insert_task(locked)
    tx.history.task(
        instance_id=tok.instance_id,
        task_id=task.id,
        token_id=tok.id,
        at=tx.now,
        type=TaskEvent.LOCKED,
        node_id=node.id,
        from_state=TaskState.READY,
        to_state=TaskState.LOCKED,
        actor=tx.actor,
        data={"attempt": 1},
    )
    return RunTask(task.id, locked, tx.variables_at_commit(tok.instance_id), waiting)


def _enter_subprocess(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.ENTERED_SUBPROCESS,
        wait_kind=WaitKind.CHILDREN,
    )
    start = g.start_of(node.id)
    child = new_token(
        tx,
        instance_id=tok.instance_id,
        node_id=start.id,
        parent=tok.id,
        scope_id=node.id,
        concurrent=False,
        via_flow=None,
    )
    create(tx, [child], [(tok.id, child.id, "SUBPROCESS")])
    return NextToken(child.id, 0)


def _end_event(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    if node.error_code is not None:
        caught = throw_from_end(tx, g, tok, node.error_code)
        if caught is not None:
            return caught
        fail_token(
            tx,
            tok,
            kind="error-end",
            message=f"error end event {node.id!r} threw {node.error_code!r} and no error "
            f"boundary catches it",
        )
        return None
    if node.terminate:
        return _terminate(tx, g, tok)
    return end_token(tx, tok, g)


def end_token(tx: Tx, tok: TokenRow, g: ProcessGraph | None = None) -> Next:
    """The token's path is over; its parent (or the instance) decides what that means.

    A scope token with tokens a non-interrupting boundary spawned beside it waits for them
    (WAITING for CHILDREN at its end) before its scope completes.
    """
    if g is not None and g.spawns_tokens and not tok.concurrent and (_live_children(tx, tok)):
        move(
            tx,
            tok,
            state=TokenState.WAITING,
            event=TokenEvent.WAITING,
            wait_kind=WaitKind.CHILDREN,
            data={"until": "spawned tokens end"},
        )
        return None
    move(tx, tok, state=TokenState.COMPLETED, event=TokenEvent.COMPLETED)
    if tok.parent_token_id is None:
        set_instance_state(tx, tok.instance_id, InstanceState.COMPLETED, expected=True)
        return None
    parent = tokens.get(tx.conn, tok.parent_token_id)
    if (
        parent is None
        or parent.state != TokenState.WAITING
        or parent.wait_kind != WaitKind.CHILDREN
    ):
        return None
    return NextToken(parent.id, parent.version)


def _terminate(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """End the token's whole scope: every other token in it is cancelled, and the
    scope completes (the instance at top level; the subprocess, whose outer path goes on).

    The scope's root is the token its paths hang from: the token itself, a fork's scope
    token, or, for a path a non-interrupting boundary started, the token still working at
    that boundary's activity, whose work (task, timers, subprocess body) ends here too.
    """
    tx.flush_tokens()
    everything = {t.id: t for t in tokens.of_instance(tx.conn, tok.instance_id)}
    root = _scope_root(everything, tok)
    reason = f"terminate end event {tok.node_id!r}"
    at_work = (
        root.id != tok.id
        and root.state in (TokenState.ACTIVE, TokenState.WAITING, TokenState.FAILED)
        and not (
            root.wait_kind == WaitKind.CHILDREN
            and g.node(root.node_id).type is not NodeType.SUBPROCESS
        )
    )
    if at_work:
        end_work(tx, root, reason)  # a FAILED root's incident too: it ends here
    cancel_inside(tx, tok, below(everything.values(), root), reason, spare=tok.id)
    if at_work and root.state == TokenState.FAILED:
        resume_if_clear(tx, root.instance_id)
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.SCOPE_TERMINATED,
        node_id=tok.node_id,
        token_id=tok.id,
        actor=tx.actor,
    )
    if root.id == tok.id:
        return end_token(tx, tok, g)
    move(tx, tok, state=TokenState.COMPLETED, event=TokenEvent.COMPLETED)
    if at_work:  # the scope's own path ends where it was working: the scope is over
        return end_token(tx, root, g)
    return NextToken(root.id, root.version)  # a fork's scope token, now without children


def _scope_root(everything: dict[UUID, TokenRow], tok: TokenRow) -> TokenRow:
    """The token the paths of ``tok``'s scope hang from (see ``_terminate``)."""
    root = tok
    while root.concurrent and root.parent_token_id is not None:
        parent = everything.get(root.parent_token_id)
        if parent is None or parent.scope_id != tok.scope_id:
            break  # the subprocess's host: outside the scope
        root = parent
    return root


__all__ = ["Conflict", "arrive", "end_token", "fork_or_leave", "leave", "take"]
