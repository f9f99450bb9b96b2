"""What a task listener's ``task`` is (:func:`facts`) and how its setters' edits are applied
(:func:`apply`), with the listener's outcome, in the transaction that completes its task.

Which user task a listener stands for: during the task's creation (``create``, then
``assignment``), the task to be that the listener's own handler task carries
(``listeners.carried``): the edits make the carried task the next listener gets, or the one
created. Beside an open task (``update`` and ``assignment`` after a claim), the task its marker
names; at ``complete``, the task the token just completed; at ``timeout``, the open task of
the token the listener's token was spawned beside (its timer boundary's). The edits are
written to that row under its version (a concurrent change rolls the whole outcome back and it
is tried again from fresh reads), with history: a new assignee as ``CLAIMED``/``UNCLAIMED`` (as
a claim is), the other fields as ``UPDATED``. A ``delete`` listener's setters are refused. A
duplicate delivery of the listener's job finds its task done, so the edits apply once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from bpm.definitions.assignments import Assigned
from bpm.definitions.model import ListenerEvent, ProcessGraph
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import listeners, task_moves
from bpm.engine.semantics.code_runs import TASK_EVENTS
from bpm.states import TaskEvent, TaskKind
from bpm.store import tasks, tokens
from bpm.store.rows import TaskRow
from bpm.task_view import TaskFacts


def facts(tx: Tx, g: ProcessGraph, task: TaskRow) -> TaskFacts | None:
    """The user task listener ``task`` (a handler task) sees; None when ``task`` runs no task
    listener."""
    step = listeners.step_of(g, task)
    if step is None or step.event not in TASK_EVENTS:
        return None
    node = g.node(task.node_id)
    known = TaskFacts(
        id=str(task.id), name=node.name, definition_key=node.id, event=step.event.value
    )
    if step.creating:
        if not step.carries:
            why = "its listener task was made by an older bpm, which kept no task to be"
            return replace(known, refusal=why)
        return _from(known, listeners.carried(task))
    subject = _subject(tx, task, step)
    if subject is None:
        why = f"bpm changes no user task from a '{step.event.value}' listener here"
        return replace(known, refusal=why)
    return _from(replace(known, id=str(subject.id)), listeners.carried(subject))


def _from(known: TaskFacts, who: Assigned) -> TaskFacts:
    return replace(
        known,
        assignee=who.assignee,
        candidate_users=tuple(who.candidate_users),
        candidate_groups=tuple(who.candidate_groups),
        due_date=who.due_date,
        follow_up_date=who.follow_up_date,
        priority=who.priority,
    )


def _subject(tx: Tx, task: TaskRow, step: listeners.Step) -> TaskRow | None:
    """The existing user task a listener changes: beside it, or at its completion."""
    if step.then is not None and step.user_task is not None:
        return tasks.get(tx.conn, step.user_task)
    if step.event is ListenerEvent.COMPLETE and step.then is None and step.flow is None:
        return tasks.user_task_of(tx.conn, task.token_id, task.node_id)
    if step.event is ListenerEvent.TIMEOUT:  # beside the task's token, at its timer boundary
        waiting = tokens.forked_from(tx.conn, task.token_id)
        row = tasks.open_of_token(tx.conn, waiting) if waiting is not None else None
        return row if row is not None and row.kind == TaskKind.USER else None
    return None


def apply(tx: Tx, task: TaskRow, step: listeners.Step, edits: dict[str, Any]) -> Assigned | None:
    """Apply a listener's ``edits``; for a creation listener, the task to be they leave."""
    if step.creating:
        return replace(listeners.carried(task), **edits) if step.carries else None
    subject = _subject(tx, task, step) if edits else None
    if subject is None:
        return None
    task_moves.edit(tx, subject, _changes(subject, edits))
    return None


Change = tuple[str, dict[str, Any], dict[str, Any]]


def _changes(row: TaskRow, edits: dict[str, Any]) -> list[Change]:
    """A new assignee as ``CLAIMED``/``UNCLAIMED`` (as a claim writes it), the other fields as
    ``UPDATED``, each with the columns it sets (no candidates: NULL, as a new task has); a
    field set to the value it has changes nothing."""
    columns = {k: v or None if k.startswith("candidate") else v for k, v in edits.items()}
    columns = {k: v for k, v in columns.items() if v != getattr(row, k)}
    changes: list[Change] = []
    user = columns.pop("assignee", row.assignee)
    if user != row.assignee:
        event = TaskEvent.CLAIMED if user is not None else TaskEvent.UNCLAIMED
        data = {"assignee": user, "was": row.assignee, "by": "listener"}
        changes.append((event, data, {"assignee": user}))
    if columns:
        shown = {k: _shown(v) for k, v in edits.items() if k in columns}
        changes.append((TaskEvent.UPDATED, {"changes": shown, "by": "listener"}, columns))
    return changes


def _shown(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
