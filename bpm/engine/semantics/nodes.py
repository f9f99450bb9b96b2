"""What happens when a token is ACTIVE at a node.

Each function runs inside one transaction that moves exactly one existing token, and returns
what the job should do next (go on with a token, run a task, or stop)."""

from __future__ import annotations

from typing import assert_never

from bpm.definitions.assignments import Assigned
from bpm.definitions.model import ACTIVITIES, ListenerEvent, Node, NodeType, ProcessGraph
from bpm.engine.core.tx import Next, NextToken, Tx
from bpm.engine.semantics import (
    activities,
    conditions,
    decisions,
    escalations,
    event_gateways,
    event_subprocess_timers,
    event_subprocesses,
    gateways,
    interruptions,
    listeners,
    multi_instance,
    process_ends,
    records,
    sagas,
    scopes,
    signal_throws,
    task_creation,
    task_events,
    waits,
)
from bpm.engine.semantics.bpmn_errors import throw_from_end
from bpm.engine.semantics.called_errors import propagate
from bpm.engine.semantics.cancelling import cancel_inside, cancel_timers, end_work
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.instance_state import resume_if_clear, set_instance_state
from bpm.engine.semantics.moves import move, take
from bpm.engine.semantics.transactions import cancel_transaction, leave_by_cancel_boundary
from bpm.engine.semantics.tree import Tree, has_live_children, waits_for_children
from bpm.states import EngineEvent, InstanceState, TokenEvent, TokenMode, TokenState, WaitKind
from bpm.store.rows import TokenRow


def arrive(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """A token ACTIVE at a node: the ``take`` listeners of the flow it came by first."""
    if tok.via_flow is not None and tok.mode != TokenMode.COMPENSATION:
        if tok.via_flow in g.turning_flows:
            gateways.nudge_scope(tx, tok)
        flow = g.flows.get(tok.via_flow)
        if flow is not None and flow.listeners:
            return listeners.run(tx, tok, g.node(tok.node_id), ListenerEvent.TAKE, 0, flow)
    return _arrive_now(tx, g, tok)


def _arrive_now(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    node = g.node(tok.node_id)
    if tok.mode == TokenMode.COMPENSATION:
        return activities.enter_compensation(tx, g, tok, node)
    if g.has_conditions:
        if (fired := conditions.enter(tx, g, tok, node)) is not None:
            return fired.next  # a conditional boundary on the activity held as it began
        tok = tx.current(tok)
    if node.multi_instance is not None and not multi_instance.is_iteration(tok):
        return depart(tx, g, multi_instance.enter(tx, g, tok, node), node)
    if node.inputs and not _mapped(tx, tok, scopes.enter(tx, g, tok, node)):
        return None
    if node.listeners_of(ListenerEvent.TIMEOUT):  # a user task's timeout (its own boundary)
        return listeners.run(tx, tok, node, ListenerEvent.TIMEOUT)
    if node.listeners_of(ListenerEvent.START):
        waiting = listeners.run(tx, tok, node, ListenerEvent.START)
        _arm(tx, g, tok, node)
        return waiting
    return begin(tx, g, tok, node)


def begin(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node, *, armed: bool = False) -> Next:
    """The node's own work, once its start listeners ran (``armed``: its timers already are)."""
    if node.decision is not None:
        return leave(tx, g, tok, node) if decisions.evaluate(tx, g, tok, node) else None
    if node.type in ACTIVITIES:
        result: Next
        if node.type is NodeType.USER_TASK and task_creation.has_listeners(node):
            result = task_creation.begin(tx, tok, node)
        else:
            result = activities.enter(tx, g, tok, node)
        if not armed:
            _arm(tx, g, tok, node)
        return result
    return _pass(tx, g, tok, node)


def _arm(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> None:
    """An activity's boundary timers start when a token enters it and waits there."""
    if node.type in ACTIVITIES and g.timer_boundaries(node.id):
        if multi_instance.is_iteration(tok):
            return  # a multi-instance activity's timers are its body's
        current = tx.current(tok)
        if current.state == TokenState.WAITING:
            waits.arm_boundaries(tx, g, current, node)


def listener_done(
    tx: Tx, g: ProcessGraph, tok: TokenRow, step: listeners.Step, who: Assigned | None = None
) -> Next:
    """A listener finished: the next one of its event, or what the event leads to (``who``:
    the task to be a creation listener left)."""
    if step.boundary is not None:
        return interruptions.listener_done(tx, g, tok, step)
    following = step.index + 1
    if step.process:  # the process's next end listener, or the instance's end
        if step.cancelling:  # as it is cancelled
            return process_ends.cancel_listener_done(tx, g, tok, step)
        return end_token(tx, tok, g, listened=following)
    node = g.node(tok.node_id)
    if step.then is not None:  # a token beside an open user task: its listeners, then it ends
        return task_events.next_beside(tx, tok, node, step) or end_token(tx, tok, g)
    if step.flow is not None:  # a flow's take listeners: then the token arrives
        flow = g.flows[step.flow]
        if following < len(flow.listeners):
            return listeners.run(tx, tok, node, step.event, following, flow)
        return _arrive_now(tx, g, tok)
    if step.creating:
        return task_creation.listener_done(tx, tok, node, step, who)
    if following < len(node.listeners_of(step.event)):
        return listeners.run(tx, tok, node, step.event, following)
    if step.event is ListenerEvent.START:
        return begin(tx, g, tok, node, armed=True)
    if step.event is ListenerEvent.END:
        return (
            _end_event(tx, g, tok, node)
            if node.type is NodeType.END
            else _leave_now(tx, g, tok, node)
        )
    return leave(tx, g, tok, node)  # complete, timeout


def after_user_task(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """A completed user task's ``complete`` listeners, then the way out."""
    if node.listeners_of(ListenerEvent.COMPLETE):
        return listeners.run(tx, tok, node, ListenerEvent.COMPLETE)
    return leave(tx, g, tok, node)


def _pass(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """Every node that is not an activity (``begin`` sent those to ``activities.enter``);
    the list is whole (mypy's ``assert_never``), so a new type has to be placed."""
    match node.type:
        case NodeType.COMPENSATION_THROW:
            return _throw_compensation(tx, g, tok, node)
        case NodeType.ESCALATION_THROW:
            assert node.escalation is not None
            if (caught := escalations.throw_going_on(tx, g, tok, node.escalation)) is not None:
                return caught.next
            return leave(tx, g, tx.current(tok), node)
        case NodeType.END:
            if node.cancel:
                return cancel_transaction(tx, g, tok, node)
            if node.compensate:
                return _throw_compensation(tx, g, tok, node)
            if node.listeners_of(ListenerEvent.END):
                return listeners.run(tx, tok, node, ListenerEvent.END)
            return _end_event(tx, g, tok, node)
        case NodeType.TIMER:
            return waits.wait_for_timer(tx, tok, node)
        case NodeType.MESSAGE:
            return waits.wait_for_message(tx, tok, node)
        case NodeType.CONDITIONAL:
            return leave(tx, g, tok, node) if conditions.arrive(tx, g, tok, node) else None
        case NodeType.SIGNAL:
            return waits.wait_for_signal(tx, tok, node)
        case NodeType.SIGNAL_THROW:
            thrown = signal_throws.throw_at(tx, g, tok, node)
            return leave(tx, g, tok, node) if thrown else None
        case NodeType.EXCLUSIVE:
            return gateways.exclusive(tx, g, tok, node)
        case NodeType.EVENT_GATEWAY:
            return event_gateways.wait(tx, g, tok, node)
        case NodeType.PARALLEL:
            if node.is_join:
                return gateways.park_at_join(tx, g, tok)
            return gateways.fork_or_leave(tx, g, tok, node)
        case NodeType.INCLUSIVE:
            if node.is_join and (tok.concurrent or _spawned_beside(tx, g, tok)):
                return gateways.park_at_join(tx, g, tok)
            return gateways.leave_by_conditions(tx, g, tok, node)
        case NodeType.START:
            if g.event_subprocesses:  # a scope begins: its event subprocesses' timers
                event_subprocess_timers.arm(tx, g, tok, node)
                if g.has_conditions and (fired := conditions.scope_started(tx, g, tok, node)):
                    return fired.next
            return leave(tx, g, tx.current(tok), node)
        case NodeType.TASK | NodeType.MANUAL_TASK | NodeType.BOUNDARY:
            return leave(tx, g, tok, node)  # nothing to do here: pass through
        case (
            NodeType.SERVICE_TASK
            | NodeType.USER_TASK
            | NodeType.RECEIVE_TASK
            | NodeType.SUBPROCESS
            | NodeType.CALL_ACTIVITY
        ):
            raise AssertionError(f"activity {node.id!r} passed through")
        case _:
            assert_never(node.type)


def _spawned_beside(tx: Tx, g: ProcessGraph, tok: TokenRow) -> bool:
    """Paths a non-interrupting boundary started hang from this lone token (a join waits)."""
    return g.spawns_tokens and has_live_children(tx, tok)


def _throw_compensation(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    if not node.wait_for_completion:
        return _compensate_beside(tx, g, tok, node)
    thrown = sagas.throw(tx, g, tok, node)
    return thrown_compensation_done(tx, g, thrown.anchor) if thrown else None


def leave(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """Move along the node's outgoing flow; with none, the path ends here (as Camunda); with
    several, or a conditional one, along each whose condition holds (``gateways``).

    Leaving an activity disarms its boundary timers in the same transaction, and an activity
    that declares a compensation gets its record. A COMPENSATION token leaving is its
    compensation done."""
    if tok.mode == TokenMode.COMPENSATION:
        return sagas.compensated(tx, tok)
    if node.listeners_of(ListenerEvent.END):
        return listeners.run(tx, tok, node, ListenerEvent.END)
    return _leave_now(tx, g, tok, node)


def _leave_now(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """Leaving, once the node's end listeners ran: its outputs, its compensation record,
    its boundary timers disarmed, and the way out. An iteration of a multi-instance
    activity ends instead; its body leaves once they are done (``depart``)."""
    if node.multi_instance is not None and multi_instance.is_iteration(tok):
        if node.compensation is not None:  # each iteration is undone apart, as in Camunda 7
            records.record_success(tx, tok, node)
        return depart(tx, g, multi_instance.iteration_done(tx, g, tok, node), node)
    if node.outputs and not _mapped(tx, tok, scopes.complete(tx, g, tok, node)):
        return None
    if node.compensation is not None:
        records.record_success(tx, tok, node)
    return _out(tx, g, tok, node)


def depart(tx: Tx, g: ProcessGraph, step: Next | multi_instance.Leaving, node: Node) -> Next:
    """A multi-instance body that is done leaves by the activity's flows (its iterations
    ran the listeners and outputs); anything else is the step's own signal."""
    if isinstance(step, multi_instance.Leaving):
        return _out(tx, g, step.body, node)
    return step


def _out(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    if g.timer_boundaries(node.id) or g.event_subprocesses.get(node.id):
        cancel_timers(tx, tok, reason=f"left {node.id!r}")
    flows = g.outgoing(node.id)
    if not flows:
        return end_token(tx, tok, g)
    if len(flows) == 1 and flows[0].condition is None:
        return take(tx, tok, flows[0])
    return gateways.leave_by_conditions(tx, g, tok, node)


def _mapped(tx: Tx, tok: TokenRow, problem: str | None) -> bool:
    """An input or output mapping that cannot be evaluated fails the token, as a condition
    does: an operator fixes the variables and retries it."""
    if problem is None:
        return True
    fail_token(tx, tx.current(tok), kind="mapping", message=problem)
    return False


def _end_event(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    if node.error_code is not None:
        caught = throw_from_end(tx, g, tok, node.error_code, node.error_message or "")
        if caught is not None:
            return caught
        if propagate(tx, tok, node.error_code, node.error_message or ""):
            return None  # the call activity that started this instance catches it
        why = f"error end event {node.id!r} threw {node.error_code!r} and no boundary catches it"
        fail_token(tx, tok, kind="error-end", message=why)
        return None
    if node.terminate:
        return _terminate(tx, g, tok)
    if node.escalation is not None:
        if (escalated := escalations.throw_going_on(tx, g, tok, node.escalation)) is not None:
            return escalated.next
        return end_token(tx, tx.current(tok), g)
    if node.signal is not None and not signal_throws.throw_at(tx, g, tok, node):
        return None
    return end_token(tx, tok, g)


def end_token(tx: Tx, tok: TokenRow, g: ProcessGraph | None = None, *, listened: int = 0) -> Next:
    """The token's path is over; its parent (or the instance) decides what that means.

    A scope token with tokens a non-interrupting boundary spawned beside it waits for them
    (WAITING for CHILDREN at its end) before its scope completes. Before the root token's
    end (the instance's), the process's ``end`` listeners run (``listened``: how many ran).
    """
    if g is not None and g.spawns_tokens and not tok.concurrent and has_live_children(tx, tok):
        move(
            tx,
            tok,
            state=TokenState.WAITING,
            event=TokenEvent.WAITING,
            wait_kind=WaitKind.CHILDREN,
            data={"until": "spawned tokens end"},
        )
        return None
    if tok.parent_token_id is None and g is not None and listened < len(g.end_listeners):
        return listeners.run_process_end(tx, g, tok, listened)
    move(tx, tok, state=TokenState.COMPLETED, event=TokenEvent.COMPLETED)
    if tok.parent_token_id is None:
        if g is not None and g.event_subprocesses.get(None):
            event_subprocesses.disarm(tx, g, tok, None, "the process ended")
        set_instance_state(tx, tok.instance_id, InstanceState.COMPLETED, expected=True)
        return None
    parent = tx.token(tok.parent_token_id)
    if parent is None or not waits_for_children(parent):
        return None
    return NextToken(parent.id, parent.version, seen=parent)


def _terminate(tx: Tx, g: ProcessGraph, tok: TokenRow) -> Next:
    """End the token's whole scope: every other token in it is cancelled, and the
    scope completes (the instance at top level; the subprocess, whose outer path goes on).

    The scope's root is the token its paths hang from: the token itself, a fork's scope
    token, or, for a path a non-interrupting boundary started, the token still working at
    that boundary's activity, whose work (task, timers, subprocess body) ends here too.
    """
    tree = Tree.read(tx, tok.instance_id)
    root = tree.scope_root(tok)
    reason = f"terminate end event {tok.node_id!r}"
    at_work = (
        root.id != tok.id
        and root.state in (TokenState.ACTIVE, TokenState.WAITING, TokenState.FAILED)
        and not (root.wait_kind == WaitKind.CHILDREN and not g.node(root.node_id).is_scope)
    )
    if at_work:
        end_work(tx, root, reason)  # a FAILED root's incident too: it ends here
    cancel_inside(tx, tok, tree.below(root), reason, spare=tok.id)
    if g.event_subprocesses:  # a subprocess's event subprocesses run beside its body root
        event_subprocesses.end_beside(tx, g, tree, tok, reason)
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


def thrown_compensation_done(tx: Tx, g: ProcessGraph, anchor: TokenRow) -> Next:
    """A thrown compensation is over: the throwing token goes on (it terminates nothing)."""
    tx.history.engine(
        instance_id=anchor.instance_id,
        at=tx.now,
        type=EngineEvent.COMPENSATION_DONE,
        node_id=anchor.node_id,
        token_id=anchor.id,
        actor=tx.actor,
    )
    node = g.node(anchor.node_id)
    if node.cancel:  # a cancel end event: the transaction leaves by its cancel boundary
        return leave_by_cancel_boundary(tx, g, anchor)
    if node.type is NodeType.END or not node.wait_for_completion:
        return end_token(tx, anchor, g)  # a compensation run beside its thrower ends here
    return leave(tx, g, anchor, node)


def _compensate_beside(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """``waitForCompletion="false"``: the compensation runs under a token of its own, beside
    the throwing token, which goes on at once (a scope's end waits for it, as for a path a
    non-interrupting boundary started)."""
    anchor = sagas.anchor_beside(tx, tok)
    thrown = sagas.throw(tx, g, anchor, node)
    if thrown is not None:  # nothing to compensate: it is over before it began
        nxt = thrown_compensation_done(tx, g, thrown.anchor)
        if isinstance(nxt, NextToken):
            tx.advance_later(nxt.token_id, nxt.version)
    current = tx.current(tok)
    if node.type is NodeType.END:
        return end_token(tx, current, g)
    return leave(tx, g, current, node)
