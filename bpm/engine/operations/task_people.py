"""Who works on a user task, changed by a person or a tool rather than by a listener: set the
assignee outright (Camunda's ``setAssignee``: no claim check, None unassigns), add and remove
candidate users and groups, and leave comments.

Each change is made to the open task under its version with its history row in the same
transaction (a new assignee as ``CLAIMED``/``UNCLAIMED``, candidates as ``UPDATED``), and a
new assignee runs the task's assignment listeners as a claim does.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Next
from bpm.engine.operations.user_tasks import after_assignment, open_task
from bpm.engine.semantics import task_moves
from bpm.errors import InvalidOperation, TaskNotFound
from bpm.limits import NAME_MAX, check_text
from bpm.states import TaskEvent, TaskKind
from bpm.store import task_comments, tasks
from bpm.store.task_comments import CommentRow

#: The longest comment bpm keeps (Camunda's column holds 4000 characters).
COMMENT_MAX = 4000


def set_assignee(core: EngineCore, task_id: UUID, user: str | None, actor: str | None) -> None:
    if user is not None:
        check_text(user, "the assignee", NAME_MAX)

    def body() -> Next:
        with core.transaction(actor) as tx:
            task = open_task(tx, task_id)
            if task.assignee == user:
                return None
            event = TaskEvent.CLAIMED if user is not None else TaskEvent.UNCLAIMED
            task_moves.assign(tx, task, user, event)
            return after_assignment(core, tx, task, user)

    core.send_next(core.retrying(body))


def edit_candidates(
    core: EngineCore,
    task_id: UUID,
    *,
    add_users: Sequence[str] = (),
    remove_users: Sequence[str] = (),
    add_groups: Sequence[str] = (),
    remove_groups: Sequence[str] = (),
    actor: str | None = None,
) -> None:
    for name in (*add_users, *remove_users, *add_groups, *remove_groups):
        check_text(name, "a candidate", NAME_MAX)

    def body() -> Next:
        with core.transaction(actor) as tx:
            task = open_task(tx, task_id)
            users = _edited(task.candidate_users, add_users, remove_users)
            groups = _edited(task.candidate_groups, add_groups, remove_groups)
            columns = {}
            if users != (task.candidate_users or []):
                columns["candidate_users"] = users or None
            if groups != (task.candidate_groups or []):
                columns["candidate_groups"] = groups or None
            if columns:
                data = {"changes": dict(columns), "by": actor or "api"}
                task_moves.edit(tx, task, [(TaskEvent.UPDATED, data, columns)])
            return None

    core.send_next(core.retrying(body))


def _edited(names: list[str] | None, add: Sequence[str], remove: Sequence[str]) -> list[str]:
    kept = [n for n in names or [] if n not in remove]
    return kept + [n for n in dict.fromkeys(add) if n not in kept]


def add_comment(core: EngineCore, task_id: UUID, message: str, user: str | None) -> CommentRow:
    check_text(message, "the comment", COMMENT_MAX)
    if not message.strip():
        raise InvalidOperation("a comment needs a message")
    with core.transaction(user) as tx:
        task = open_task(tx, task_id)
        return task_comments.insert(tx.conn, task.id, task.instance_id, user, message, tx.now)


def comments(core: EngineCore, task_id: UUID) -> list[CommentRow]:
    """The task's comments, open or ended, oldest first."""
    with core.db.transaction() as conn:
        task = tasks.get(conn, task_id)
        if task is None or task.kind != TaskKind.USER:
            raise TaskNotFound(f"no user task has id {task_id}")
        return task_comments.of_task(conn, task_id)
