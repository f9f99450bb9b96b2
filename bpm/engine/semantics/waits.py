"""Arriving at a wait state, and the timers that go with it.

A token that enters a timer event, a user task, a receive task or a message event becomes
WAITING until something outside it happens: a timer fires, a person completes the task, a
message is correlated. A token that enters an activity with timer boundary events arms one
timer per boundary; whatever moves the token off the activity disarms them, in the same
transaction, so a timer never fires for a visit that is over.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions import assignments, form_values
from bpm.definitions.model import Node, ProcessGraph
from bpm.definitions.timers import TimerValueError
from bpm.engine.core.tx import Next, Tx
from bpm.engine.semantics import scopes, task_moves, writes
from bpm.engine.semantics.failures import fail_token
from bpm.engine.semantics.moves import move
from bpm.errors import ExpressionEvalError
from bpm.expressions import Expression
from bpm.states import (
    TaskKind,
    TimerState,
    TokenEvent,
    TokenState,
    WaitKind,
)
from bpm.store import timers
from bpm.store.rows import TokenRow


def wait_for_timer(tx: Tx, tok: TokenRow, node: Node) -> Next:
    """Intermediate timer catch event: schedule the timer, the token waits for it."""
    waiting = move(
        tx, tok, state=TokenState.WAITING, event=TokenEvent.WAITING, wait_kind=WaitKind.TIMER
    )
    schedule(tx, waiting, node, node)
    return None


def wait_for_message(tx: Tx, tok: TokenRow, node: Node) -> Next:
    """receiveTask / messageEvent: WAITING until a message of this name is correlated."""
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.WAITING,
        wait_kind=WaitKind.MESSAGE,
        data={"message": node.message},
    )
    return None


def wait_for_signal(tx: Tx, tok: TokenRow, node: Node) -> Next:
    """signalEvent: WAITING until a signal of this name is broadcast (only one thrown after
    the token waits reaches it: the throw snapshots the tokens waiting then)."""
    move(
        tx,
        tok,
        state=TokenState.WAITING,
        event=TokenEvent.WAITING,
        wait_kind=WaitKind.SIGNAL,
        data={"signal": node.signal},
    )
    return None


def assigned(tx: Tx, tok: TokenRow, node: Node) -> assignments.Assigned | None:
    """A user task's people, dates and priority, evaluated now over what the token sees;
    None when one cannot be evaluated (the token failed with an incident naming it)."""
    try:
        return assignments.resolve(node, _view(tx, tok) if _evaluates(node) else {}, tx.now)
    except ExpressionEvalError as exc:
        fail_token(tx, tok, kind="user-task", message=str(exc))
        return None


def create_user_task(
    tx: Tx, tok: TokenRow, node: Node, who: assignments.Assigned | None = None
) -> Next:
    """A READY user task; it stays READY (claimed or not) until someone completes it. Its
    people, dates and priority are ``who`` (as its creation listeners left them), else
    evaluated now; its form defaults are evaluated now, over what the token sees; a value that
    cannot be evaluated fails the token with an incident naming the attribute."""
    if who is None and (who := assigned(tx, tok, node)) is None:
        return None
    try:
        view = _view(tx, tok) if node.form and node.form.evaluates else {}
        defaults = form_values.shown_defaults(node.form, view) if node.form else {}
    except ExpressionEvalError as exc:
        fail_token(tx, tok, kind="user-task", message=str(exc))
        return None
    move(tx, tok, state=TokenState.WAITING, event=TokenEvent.WAITING, wait_kind=WaitKind.USER)
    form = form_values.shown_form(node.form, defaults) if node.form else None
    task = task_moves.new_task(
        tx,
        tok,
        node.id,
        TaskKind.USER,
        priority=who.priority,
        assignee=who.assignee,
        candidate_groups=who.candidate_groups or None,
        candidate_users=who.candidate_users or None,
        due_date=who.due_date,
        follow_up_date=who.follow_up_date,
        form=form,
    )
    task_moves.create(tx, task, _created(who, form))
    return None


def _evaluates(node: Node) -> bool:
    """Whether creating the task evaluates an expression (only then are variables read)."""
    texts = [node.assignee, node.due_date, node.follow_up_date, node.priority_expression]
    texts += [*node.candidate_users, *node.candidate_groups]
    return any(isinstance(t, Expression) for t in texts) or bool(node.form and node.form.evaluates)


def _created(who: assignments.Assigned, form: dict[str, Any] | None) -> dict[str, Any]:
    """The CREATED row's data: what the task was given, as evaluated."""
    data: dict[str, Any] = {
        "user_task": True,
        "assignee": who.assignee,
        "candidate_groups": who.candidate_groups,
        "priority": who.priority,
    }
    if who.candidate_users:
        data["candidate_users"] = who.candidate_users
    for key, value in (("due_date", who.due_date), ("follow_up_date", who.follow_up_date)):
        if value is not None:
            data[key] = value.isoformat()
    if form is not None:
        data["form"] = form
    return data


def arm_boundaries(tx: Tx, g: ProcessGraph, tok: TokenRow, activity: Node) -> None:
    """One SCHEDULED timer per timer boundary of ``activity``, owned by the entering token."""
    for boundary in g.timer_boundaries(activity.id):
        if not schedule(tx, tok, boundary, activity):
            return


def _view(tx: Tx, tok: TokenRow) -> dict[str, Any]:
    if tx.graph_for is None:
        return tx.load_variables(tok.instance_id)
    return scopes.view(tx, tx.graph_for(tok.instance_id), tok)


def schedule(tx: Tx, tok: TokenRow, timer_node: Node, at_node: Node) -> bool:
    """Insert the timer; a value that is not a duration or date fails the token instead."""
    assert timer_node.timer is not None
    try:
        values = _view(tx, tok) if timer_node.timer.expression else {}
        fire_at = timer_node.timer.fire_at(tx.now, values)
    except (TimerValueError, ExpressionEvalError) as exc:
        fail_token(
            tx, tok, kind="timer", message=f"timer {timer_node.id!r} at {at_node.id!r}: {exc}"
        )
        return False
    writes.schedule_timer(tx, tok, timer_node, fire_at)
    return True


def rearm_cycle(tx: Tx, tok: TokenRow, boundary: Node) -> None:
    """A cycle on a non-interrupting boundary fired: schedule its next tick, counted from
    when this visit of the activity armed it (the timers of this visit are those after the
    last one cancelled, since leaving the activity cancels its armed timer). The next tick
    is the first after now: after an outage the missed ticks fire once, not one by one. A
    cycle that has no more ticks arms nothing."""
    assert boundary.timer is not None
    mine = sorted(
        (
            t
            for t in timers.of_instance(tx.conn, tok.instance_id)
            if t.token_id == tok.id and t.node_id == boundary.id
        ),
        key=lambda t: (t.created_at, str(t.id)),
    )
    cancelled = [i for i, t in enumerate(mine) if t.state == TimerState.CANCELLED]
    visit = mine[cancelled[-1] + 1 :] if cancelled else mine
    fired = sum(1 for t in visit if t.state == TimerState.FIRED)
    armed_at = visit[0].created_at if visit else tx.now
    try:
        values = _view(tx, tok) if boundary.timer.expression else {}
        tick = boundary.timer.next_tick(tx.now, armed_at, fired, values)
    except (TimerValueError, ExpressionEvalError) as exc:
        fail_token(tx, tok, kind="timer", message=f"timer {boundary.id!r}: {exc}")
        return
    if tick is not None:
        writes.schedule_timer(tx, tok, boundary, tick)
