"""The facade's user-task half: claiming, assigning, candidates, comments and completing, as
``bpm.engine.operations.user_tasks`` and ``task_people`` do them (``Engine`` inherits it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from bpm.engine.core.causes import because
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.ids import as_id
from bpm.engine.operations import task_people, user_tasks
from bpm.store.task_comments import CommentRow


class UserTaskCalls:
    core: EngineCore

    def claim(self, task_id: UUID | str, user: str) -> None:
        with because(f"api claim task={task_id}"):
            user_tasks.claim(self.core, as_id(task_id, "task"), user)

    def unclaim(self, task_id: UUID | str) -> None:
        with because(f"api unclaim task={task_id}"):
            user_tasks.unclaim(self.core, as_id(task_id, "task"))

    def set_assignee(
        self, task_id: UUID | str, user: str | None, *, actor: str | None = None
    ) -> None:
        """Assign the open task to ``user`` whoever has it (None: unassign); ``claim`` is
        the one that refuses a task someone else has."""
        with because(f"api set_assignee task={task_id}"):
            task_people.set_assignee(self.core, as_id(task_id, "task"), user, actor)

    def edit_candidates(
        self,
        task_id: UUID | str,
        *,
        add_users: Sequence[str] = (),
        remove_users: Sequence[str] = (),
        add_groups: Sequence[str] = (),
        remove_groups: Sequence[str] = (),
        actor: str | None = None,
    ) -> None:
        """Add and remove candidate users and groups of the open task."""
        with because(f"api edit_candidates task={task_id}"):
            task_people.edit_candidates(
                self.core,
                as_id(task_id, "task"),
                add_users=add_users,
                remove_users=remove_users,
                add_groups=add_groups,
                remove_groups=remove_groups,
                actor=actor,
            )

    def add_comment(
        self, task_id: UUID | str, message: str, *, user: str | None = None
    ) -> CommentRow:
        """A comment on the open task, kept after it ends."""
        with because(f"api add_comment task={task_id}"):
            return task_people.add_comment(self.core, as_id(task_id, "task"), message, user)

    def comments(self, task_id: UUID | str) -> list[CommentRow]:
        return task_people.comments(self.core, as_id(task_id, "task"))

    def complete_user_task(
        self,
        task_id: UUID | str,
        variables: Mapping[str, Any] | None = None,
        *,
        user: str | None = None,
        local_variables: Mapping[str, Any] | None = None,
    ) -> None:
        with because(f"api complete_user_task task={task_id}"):
            tid, local = as_id(task_id, "task"), local_variables
            user_tasks.complete(self.core, tid, variables, user, local)
