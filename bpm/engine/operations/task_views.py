"""Open user tasks as an API lists them: with their instance's facts, the node's name and
documentation, and the values their form shows.

The task row holds the form as evaluated when the task was created (``docs/bpmn.md``, "User
tasks"); its name and documentation stay in the definition, so they are read from the graph
(cached: definitions never change).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.semantics import scopes
from bpm.errors import TaskNotFound
from bpm.states import TaskKind, TaskState
from bpm.store import tasks, user_task_queries
from bpm.store.paging import Page
from bpm.store.user_task_queries import FoundUserTask, UserTaskQuery


@dataclass(frozen=True)
class UserTaskView:
    id: UUID
    node_id: str
    name: str | None
    description: str | None
    assignee: str | None
    created_at: datetime
    updated_at: datetime
    due_date: datetime | None
    follow_up_date: datetime | None
    priority: int
    token_id: UUID
    instance_id: UUID
    definition_id: UUID
    process_key: str
    business_key: str | None
    candidate_groups: tuple[str, ...]
    candidate_users: tuple[str, ...]
    #: The form as stored on the task: ``key``, ``ref`` ({id, binding, version}), ``fields``.
    form: Mapping[str, Any] | None
    #: READY while open; DONE or CANCELLED in the task history (``ended_at``: when).
    state: TaskState = TaskState.READY
    ended_at: datetime | None = None


@dataclass(frozen=True)
class FormValue:
    """A value a form shows: the variable's, else the field's default; ``type`` is the form
    field's (``string``, ``long``, ``boolean``, ``date``, ``enum``), None without a form."""

    name: str
    value: Any
    type: str | None


def find(core: EngineCore, q: UserTaskQuery, page: Page) -> list[UserTaskView]:
    with core.db.transaction() as conn:
        found = user_task_queries.find(conn, q, page)
        return [_view(f, core.graph(f.definition_id, conn)) for f in found]


def count(core: EngineCore, q: UserTaskQuery) -> int:
    with core.db.transaction() as conn:
        return user_task_queries.count(conn, q)


def get(core: EngineCore, task_id: UUID) -> UserTaskView:
    found = find(core, UserTaskQuery(task_ids=[task_id]), Page(limit=1))
    if not found:
        raise TaskNotFound(f"no open user task has id {task_id}")
    return found[0]


def form_values(
    core: EngineCore, task_id: UUID, names: Sequence[str] | None = None
) -> list[FormValue]:
    """The fields of the task's form with the values it shows (the variable the token sees,
    else the default evaluated when the task was created); a task without form fields shows
    every variable its token sees, as Camunda's ``form-variables`` does. ``names``: only
    those."""
    task = get(core, task_id)
    seen = variables(core, task_id)
    fields = list((task.form or {}).get("fields") or [])
    if not fields:
        out = [FormValue(name, value, None) for name, value in sorted(seen.items())]
    else:
        out = [
            FormValue(f["id"], seen.get(f["id"], f.get("defaultValue")), f.get("type"))
            for f in fields
        ]
    return [v for v in out if names is None or v.name in names]


def variables(core: EngineCore, task_id: UUID) -> dict[str, Any]:
    """The variables the token of an open user task sees (its scopes' locals over the
    instance's variables)."""
    with core.transaction("api read") as tx:
        row = tasks.get(tx.conn, task_id)
        if row is None or row.kind != TaskKind.USER or row.state != TaskState.READY:
            raise TaskNotFound(f"no open user task has id {task_id}")
        g = core.graph_of(tx, row.instance_id)
        return scopes.view_of_task(tx, g, row)


_ENDED = (TaskState.DONE, TaskState.CANCELLED)
#: Every state a user task passes through (the task history reads them all).
EVERY_STATE = (TaskState.READY, *_ENDED)


def find_history(core: EngineCore, q: UserTaskQuery, page: Page) -> list[UserTaskView]:
    """User tasks open and ended (until retention deletes their instance)."""
    return find(core, replace(q, states=q.states or EVERY_STATE), page)


def count_history(core: EngineCore, q: UserTaskQuery) -> int:
    return count(core, replace(q, states=q.states or EVERY_STATE))


def _view(found: FoundUserTask, g: ProcessGraph) -> UserTaskView:
    t = found.task
    node = g.nodes.get(t.node_id)
    return UserTaskView(
        t.id,
        t.node_id,
        node.name if node else None,
        _documentation(g.document, t.node_id),
        t.assignee,
        t.created_at,
        t.updated_at,
        t.due_date,
        t.follow_up_date,
        t.priority,
        t.token_id,
        t.instance_id,
        found.definition_id,
        found.process_key,
        found.business_key,
        tuple(t.candidate_groups or ()),
        tuple(t.candidate_users or ()),
        t.form,
        TaskState(t.state),
        t.updated_at if t.state in _ENDED else None,
    )


def _documentation(document: Mapping[str, Any], node_id: str) -> str | None:
    """The node's documentation as the definition wrote it (nodes of subprocesses too)."""
    for node in document.get("nodes") or []:
        if not isinstance(node, Mapping):
            continue
        if node.get("id") == node_id:
            text = node.get("documentation")
            return text if isinstance(text, str) else None
        if node.get("nodes"):
            found = _documentation(node, node_id)
            if found is not None:
                return found
    return None
