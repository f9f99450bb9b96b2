"""A task listener's ``task``: Camunda 7's ``DelegateTask`` over a bpm user task.

It reads the task's people, dates and priority, and its setters (``setAssignee``,
``addCandidateGroup``, ``setDueDate``, ``setPriority``, ...) record *edits*: the listener
runs as a task of its own, outside any transaction, so nothing is written while it runs. The
engine applies the edits with the listener's outcome (``engine/semantics/task_edits``): to
the task being created, for a ``create`` or ``assignment`` listener of its creation; to the
existing task under its version, for the others. A bad argument is refused at the call, with
the call in the message, so the listener fails (an incident) and nothing is applied.

bpm's user tasks have no owner, description or own name (the name is the node's), so
``setOwner``, ``setDescription`` and ``setName`` are not offered; they are refused at deploy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bpm.juel_methods import (
    TASK_CHANGES,
    TASK_READS,
    TASK_WRITES,
    ExecutionView,
    Facts,
    MethodError,
)
from bpm.juel_values import DateTime


@dataclass(frozen=True)
class TaskFacts:
    """A user task as its listener sees it. ``refusal`` says why its setters are refused
    where bpm cannot apply them (None: they are applied)."""

    id: str | None = None
    name: str | None = None
    definition_key: str | None = None
    event: str | None = None
    assignee: str | None = None
    candidate_users: tuple[str, ...] = ()
    candidate_groups: tuple[str, ...] = ()
    due_date: datetime | None = None
    follow_up_date: datetime | None = None
    priority: int | None = None
    refusal: str | None = None


#: The task fields an edit may change, as the keys of :attr:`TaskView.edits`.
EDITABLE = (
    "assignee",
    "candidate_users",
    "candidate_groups",
    "due_date",
    "follow_up_date",
    "priority",
)


class TaskView(ExecutionView):
    """``task`` in a task listener: the execution's variable methods (sharing its writes)
    and the task's own getters and setters; ``edits`` are the fields the setters changed."""

    def __init__(
        self,
        variables: Mapping[str, Any],
        facts: Facts,
        task: TaskFacts,
        writes: dict[str, Any],
    ) -> None:
        super().__init__(variables, facts, writable=True, writes=writes)
        self.task = task
        #: The task's fields as the calls so far left them, and which of them they set.
        self._values: dict[str, Any] = {
            "assignee": task.assignee,
            "candidate_users": list(task.candidate_users),
            "candidate_groups": list(task.candidate_groups),
            "due_date": task.due_date,
            "follow_up_date": task.follow_up_date,
            "priority": task.priority,
        }
        self._changed: set[str] = set()

    @property
    def edits(self) -> dict[str, Any]:
        """The fields the setters changed, with their new values."""
        return {k: self._values[k] for k in EDITABLE if k in self._changed}

    def value(self, name: str) -> Any:
        return self._values[name]

    def call(self, method: str, args: list[Any], allowed: frozenset[str]) -> Any:
        if method not in allowed or method not in _METHODS:
            raise MethodError(f"'{method}' is not a method this object offers")
        if method in TASK_CHANGES and self.task.refusal is not None:
            raise MethodError(f"task.{method}(...) cannot be called here: {self.task.refusal}")
        try:
            return _METHODS[method](self, *args)
        except TypeError as exc:
            raise MethodError(f"task.{method}{_shown(args)}: {exc}") from None

    def __getattr__(self, method: str) -> Callable[..., Any]:
        """Camunda's names for a bean's Python code: ``task.setAssignee("demo")``."""
        if method not in _METHODS:
            raise AttributeError(method)
        return lambda *args: self.call(method, list(args), TASK_READS | TASK_WRITES | TASK_CHANGES)

    def change(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._changed.add(name)

    def facts_for_scripts(self) -> dict[str, Any]:
        """The getters' values as JSON, for a script's ``task``."""
        return {name: plain_fact(_METHODS[name](self)) for name in sorted(_GETTERS)}


def plain_fact(value: Any) -> Any:
    return value.iso() if isinstance(value, DateTime) else value


def _shown(args: list[Any]) -> str:
    return "(" + ", ".join(f"{a!r:.40}" for a in args) + ")"


def _user(method: str, value: Any, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise MethodError(f"task.{method}({value!r:.40}): a user or group name is non-empty text")
    return value.strip()


def _date(method: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, DateTime):
        return value.at
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise MethodError(
        f"task.{method}({value!r:.40}): a date is an ISO 8601 date-time "
        f"(2027-01-31T09:00:00Z), dateTime() or null"
    )


def _priority(view: TaskView, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        if not (isinstance(value, float) and value.is_integer()):
            raise MethodError(f"task.setPriority({value!r:.40}): a priority is a whole number")
        value = int(value)
    view.change("priority", value)


def _add(view: TaskView, key: str, method: str, name: Any) -> None:
    checked = _user(method, name, optional=False)
    names = [n for n in view.value(key) if n != checked]
    view.change(key, [*names, checked])


def _add_all(view: TaskView, key: str, method: str, names: Any) -> None:
    if not isinstance(names, list | tuple):
        raise MethodError(f"task.{method}({names!r:.40}): give a list of names")
    for name in names:
        _add(view, key, method, name)


def _delete(view: TaskView, key: str, method: str, name: Any) -> None:
    checked = _user(method, name, optional=False)
    view.change(key, [n for n in view.value(key) if n != checked])


def _when(view: TaskView, key: str) -> DateTime | None:
    at = view.value(key)
    return DateTime(at) if at is not None else None


def _candidates(view: TaskView) -> list[dict[str, Any]]:
    """Camunda's identity links of type ``candidate``, as JSON objects."""
    users = [{"userId": u, "groupId": None} for u in view.value("candidate_users")]
    groups = [{"userId": None, "groupId": g} for g in view.value("candidate_groups")]
    return [{"type": "candidate", **link} for link in users + groups]


_GETTERS: Mapping[str, Callable[..., Any]] = {
    "getId": lambda v: v.task.id,
    "getName": lambda v: v.task.name,
    "getTaskDefinitionKey": lambda v: v.task.definition_key,
    "getEventName": lambda v: v.task.event,
    "getProcessInstanceId": lambda v: v.facts.instance_id,
    "getAssignee": lambda v: v.value("assignee"),
    "getPriority": lambda v: v.value("priority"),
    "getDueDate": lambda v: _when(v, "due_date"),
    "getFollowUpDate": lambda v: _when(v, "follow_up_date"),
    "getCandidateUsers": lambda v: list(v.value("candidate_users")),
    "getCandidateGroups": lambda v: list(v.value("candidate_groups")),
    "getCandidates": _candidates,
}
_SETTERS: Mapping[str, Callable[..., Any]] = {
    "setAssignee": lambda v, name: v.change("assignee", _user("setAssignee", name, optional=True)),
    "setPriority": _priority,
    "setDueDate": lambda v, at: v.change("due_date", _date("setDueDate", at)),
    "setFollowUpDate": lambda v, at: v.change("follow_up_date", _date("setFollowUpDate", at)),
    "addCandidateUser": lambda v, n: _add(v, "candidate_users", "addCandidateUser", n),
    "addCandidateGroup": lambda v, n: _add(v, "candidate_groups", "addCandidateGroup", n),
    "addCandidateUsers": lambda v, n: _add_all(v, "candidate_users", "addCandidateUsers", n),
    "addCandidateGroups": lambda v, n: _add_all(v, "candidate_groups", "addCandidateGroups", n),
    "deleteCandidateUser": lambda v, n: _delete(v, "candidate_users", "deleteCandidateUser", n),
    "deleteCandidateGroup": lambda v, n: _delete(v, "candidate_groups", "deleteCandidateGroup", n),
}
_VARIABLES: Mapping[str, Callable[..., Any]] = {
    "getVariable": ExecutionView.get,
    "getVariableLocal": ExecutionView.get,
    "hasVariable": ExecutionView.has,
    "getVariables": ExecutionView.everything,
    "setVariable": ExecutionView.set,
    "setVariableLocal": ExecutionView.set,
}
_METHODS: Mapping[str, Callable[..., Any]] = {**_GETTERS, **_SETTERS, **_VARIABLES}
