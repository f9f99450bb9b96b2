"""User tasks: READY until a person completes them through the API or CLI.

Claiming only records who works on the task: anyone may claim an unclaimed task, candidate
or not (candidates say whose lists it shows in). Completing checks that a claimed task is
completed by its assignee, and that the variables submitted keep the task's form; a refusal
changes nothing. Every change is version-checked and written with its history.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from bpm.definitions.form_values import check_submission
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Next, Stale, Tx
from bpm.engine.semantics import scopes, steps, task_events, task_moves
from bpm.engine.semantics.nodes import after_user_task
from bpm.errors import InvalidOperation, TaskClaimed, TaskNotFound
from bpm.states import TaskEvent, TaskKind, TaskState, TokenState
from bpm.store import tasks
from bpm.store.rows import TaskRow
from bpm.variables import check_variables


def describe(task: TaskRow) -> dict[str, Any]:
    return {
        "id": str(task.id),
        "instance_id": str(task.instance_id),
        "node_id": task.node_id,
        "state": task.state,
        "assignee": task.assignee,
        "candidate_groups": task.candidate_groups or [],
        "candidate_users": task.candidate_users or [],
        "priority": task.priority,
        "due_date": _iso(task.due_date),
        "follow_up_date": _iso(task.follow_up_date),
        "form": task.form,
        "created_at": task.created_at.isoformat(),
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def listing(
    core: EngineCore,
    *,
    assignee: str | None = None,
    group: str | None = None,
    candidate_user: str | None = None,
    instance_id: UUID | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    with core.db.transaction() as conn:
        rows = tasks.open_user_tasks(
            conn,
            assignee=assignee,
            group=group,
            candidate_user=candidate_user,
            instance_id=instance_id,
            limit=limit,
        )
    return [describe(row) for row in rows]


def open_task(tx: Tx, task_id: UUID) -> TaskRow:
    task = tasks.get(tx.conn, task_id)
    if task is None or task.kind != TaskKind.USER:
        raise TaskNotFound(f"no user task has id {task_id}")
    if task.state != TaskState.READY:
        raise InvalidOperation(
            f"user task {task_id} ({task.node_id}) is {task.state}; only "
            f"an open task can be claimed or completed"
        )
    return task


def claim(core: EngineCore, task_id: UUID, user: str) -> None:
    if not isinstance(user, str) or not user.strip():
        raise InvalidOperation("claiming a task needs a user name")

    def body() -> Next:
        with core.transaction(user) as tx:
            task = open_task(tx, task_id)
            if task.assignee == user:
                return None
            if task.assignee is not None:
                raise TaskClaimed(
                    f"user task {task_id} is claimed by {task.assignee!r}; it "
                    f"must be unclaimed before {user!r} can claim it"
                )
            task_moves.assign(tx, task, user, TaskEvent.CLAIMED)
            return after_assignment(core, tx, task, user)

    core.send_next(core.retrying(body))


def unclaim(core: EngineCore, task_id: UUID) -> None:
    def body() -> Next:
        with core.transaction("operator") as tx:
            task = open_task(tx, task_id)
            if task.assignee is None:
                return None
            task_moves.assign(tx, task, None, TaskEvent.UNCLAIMED)
            return after_assignment(core, tx, task, None)

    core.send_next(core.retrying(body))


def after_assignment(core: EngineCore, tx: Tx, task: TaskRow, assignee: str | None) -> Next:
    """The task's ``update`` and ``assignment`` listeners, under a token beside its own."""
    g = core.graph_of(tx, task.instance_id)
    node = g.node(task.node_id)
    events = task_events.after_assignment(node, assignee)
    tok = tx.token(task.token_id) if events else None
    if tok is None:
        return None
    return task_events.run_beside(tx, tok, node, events, task.id)


def complete(
    core: EngineCore,
    task_id: UUID,
    values: Mapping[str, Any] | None,
    user: str | None = None,
    local_values: Mapping[str, Any] | None = None,
) -> None:
    """Task DONE, variables written (``local_values`` to the task's own scope), token moved
    on; what follows is dispatched at once."""
    checked = check_variables(values, where=f"complete of user task {task_id}")
    checked_local = check_variables(local_values, where=f"complete of user task {task_id}")

    def body() -> Next:
        with core.transaction(user or "operator") as tx:
            task = open_task(tx, task_id)
            if user is not None and task.assignee not in (None, user):
                raise TaskClaimed(
                    f"user task {task_id} is claimed by {task.assignee!r}, not {user!r}"
                )
            tok = tx.token(task.token_id)
            if tok is None or tok.state != TokenState.WAITING or tok.node_id != task.node_id:
                raise Stale(f"the token of user task {task_id} is no longer waiting there")
            g = core.graph_of(tx, task.instance_id)
            form = g.node(task.node_id).form
            values = dict(checked)
            if form is not None:
                submitted = {**checked, **checked_local}
                where = f"completing user task {task_id} ({task.node_id!r})"
                seen = scopes.view(tx, g, tok)
                values = {**check_submission(form, submitted, seen, _defaults(task), where)}
                values.update(checked)
            task_moves.change(
                tx,
                task,
                state=TaskState.DONE,
                event=TaskEvent.COMPLETED,
                data={"variables": values} if values else None,
                miss="conflict",
                message=f"user task {task_id} changed meanwhile",
            )
            scopes.write(tx, g, tok, values)
            scopes.write(tx, g, tok, checked_local, local=True)
            result = steps.carry_through(tx, g, after_user_task(tx, g, tok, g.node(task.node_id)))
        return result

    core.send_next(core.retrying(body))


def _defaults(task: TaskRow) -> dict[str, Any]:
    """The defaults the task's form shows, as evaluated when the task was created."""
    fields = (task.form or {}).get("fields", [])
    return {f["id"]: f["defaultValue"] for f in fields if "defaultValue" in f}
