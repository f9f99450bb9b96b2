"""JUEL method calls on an allowlist: what ``${execution.setVariable('x', 1)}``,
``${name.startsWith('A')}`` or ``${orderService.isValid(order)}`` may call.

Camunda 7 lets an expression call any public Java method; bpm calls only the methods named
here, each implemented in Python over JSON values, so a model can never reach the host. The
names are checked at deploy (:func:`check_call`), the calls dispatched at run time
(:func:`call_method`). A *bean* is the one way to user code: a Python object the
application registered (:mod:`bpm.beans`); it may be called only where the expression runs
as a task of its own (a service task's or a listener's expression), never inside the
engine's transaction, because a bean has side effects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from bpm.juel_values import DATE_METHODS, DECISION_RESULT, SPIN_METHODS, DateTime, Spin, plain
from bpm.spin_xml import SpinAttribute, SpinXml

if TYPE_CHECKING:
    from bpm.beans import BeanRegistry

#: The longest text or list a method may return (simpleeval's own string limit).
MAX_RESULT = 100_000


class CallScope(StrEnum):
    """Where an expression runs, which decides what its method calls may do."""

    #: Inside the engine's transaction (conditions, mappings, timers, people and dates):
    #: reads only, no beans.
    INLINE = "inline"
    #: As a task of its own, outside any transaction (a service task's or a listener's
    #: expression): may set variables (written with the task's outcome) and call beans.
    TASK = "task"


class MethodError(Exception):
    """A call refused or failed at run time; the evaluator adds the expression's context."""


EXECUTION_READS = frozenset(
    {
        "getVariable", "getVariableLocal", "hasVariable", "hasVariableLocal", "getVariables",
        "getProcessInstanceId", "getProcessBusinessKey", "getBusinessKey",
        "getCurrentActivityId", "getActivityInstanceId", "getId", "getProcessDefinitionId",
        "getEventName",
    }
)  # fmt: skip
EXECUTION_WRITES = frozenset(
    {"setVariable", "setVariableLocal", "removeVariable", "removeVariableLocal"}
)
#: A task listener's ``task`` (:mod:`bpm.task_view`): what it reads of the user task.
TASK_READS = frozenset(
    {
        "getId", "getName", "getAssignee", "getTaskDefinitionKey", "getEventName",
        "getProcessInstanceId", "getPriority", "getDueDate", "getFollowUpDate",
        "getCandidates", "getCandidateUsers", "getCandidateGroups",
        "getVariable", "getVariableLocal", "hasVariable", "getVariables",
    }
)  # fmt: skip
TASK_WRITES = frozenset({"setVariable", "setVariableLocal"})
#: What changes the user task itself: applied with the listener's outcome.
TASK_CHANGES = frozenset(
    {
        "setAssignee", "setPriority", "setDueDate", "setFollowUpDate",
        "addCandidateUser", "addCandidateGroup", "addCandidateUsers", "addCandidateGroups",
        "deleteCandidateUser", "deleteCandidateGroup",
    }
)  # fmt: skip
#: Camunda's task methods over what bpm's user tasks do not have.
TASK_ABSENT = {
    "setOwner": "an owner",
    "getOwner": "an owner",
    "setName": "a name of their own (the name is the node's)",
    "setDescription": "a description",
    "getDescription": "a description",
}
STRING_METHODS = frozenset(
    {
        "equals", "equalsIgnoreCase", "contains", "startsWith", "endsWith", "isEmpty",
        "length", "toUpperCase", "toLowerCase", "trim", "substring", "indexOf",
        "lastIndexOf", "replace", "split", "charAt", "concat", "toString",
        "compareTo", "isBlank",
    }
)  # fmt: skip
COLLECTION_METHODS = frozenset(
    {"size", "isEmpty", "get", "contains", "containsKey", "containsValue", "indexOf",
     "keySet", "values", "equals", "toString", *DECISION_RESULT}
)  # fmt: skip
NUMBER_METHODS = frozenset({"intValue", "longValue", "doubleValue", "toString", "equals"})
VALUE_METHODS = STRING_METHODS | COLLECTION_METHODS | NUMBER_METHODS | DATE_METHODS | SPIN_METHODS
#: Named so the refusal says what they are; any other unknown name is refused as well.
REFLECTION = frozenset(
    {"getClass", "forName", "newInstance", "getMethod", "getDeclaredMethod", "getField",
     "getDeclaredField", "setAccessible", "getRuntime", "getClassLoader", "loadClass",
     "getProcessEngineServices", "getProcessEngine"}
)  # fmt: skip
RESERVED = frozenset({"execution", "task"})
TASK_METHODS = TASK_READS | TASK_WRITES | TASK_CHANGES


def check_call(
    receiver: str | None, method: str, scope: CallScope, arguments: int = 0
) -> str | None:
    """Why a call ``receiver.method(...)`` is refused at deploy (None: allowed). ``receiver``
    is the bare name it is called on, or None for any other value."""
    if method.startswith("_") or method in REFLECTION:
        return (
            f"calls '{method}', a reflection or engine API method, which expressions may never call"
        )
    if receiver == "execution":
        if method in EXECUTION_WRITES:
            return None if scope is CallScope.TASK else _inline(f"execution.{method}")
        return None if method in EXECUTION_READS else _unknown("execution", method)
    if receiver == "task" and scope is CallScope.TASK:
        if method in TASK_ABSENT:
            return (
                f"calls task.{method}, but bpm's user tasks have no {TASK_ABSENT[method]}; "
                f"keep it in a variable instead"
            )
        return None if method in TASK_METHODS else _unknown("task", method)
    if method in VALUE_METHODS or (getter_key(method) is not None and arguments == 0):
        return None  # a getter reads a JSON object's field (a bean's, in a task)
    if receiver is not None and receiver not in RESERVED:
        if scope is CallScope.TASK:
            return None
        return (
            f"calls '{receiver}.{method}', which is no method expressions may call; a bean's "
            f"methods are called only by a service task's or a listener's expression (they run "
            f"as a task of their own, outside the engine's transaction)"
        )
    return f"calls '{method}', which is not a method expressions may call"


def _inline(what: str) -> str:
    return (
        f"calls {what}, which only a service task's or a listener's expression may call "
        f"(they run as a task of their own, outside the engine's transaction)"
    )


def _unknown(owner: str, method: str) -> str:
    known = sorted(EXECUTION_READS | EXECUTION_WRITES if owner == "execution" else TASK_METHODS)
    return f"calls {owner}.{method}, which is not one bpm offers ({', '.join(known)})"


@dataclass(frozen=True)
class Facts:
    """What an execution knows beyond its variables (from the task that runs it)."""

    instance_id: str | None = None
    business_key: str | None = None
    activity_id: str | None = None
    activity_instance_id: str | None = None
    definition_id: str | None = None
    event: str | None = None
    task_name: str | None = None
    assignee: str | None = None


class ExecutionView:
    """Camunda's ``execution`` (and, with ``is_task``, its ``task``) over the variables:
    reads see the writes made so far; ``writes`` are what the expression or script set, which
    the caller writes with the task's outcome (in one transaction, with history)."""

    def __init__(
        self,
        variables: Mapping[str, Any],
        facts: Facts | None = None,
        *,
        writable: bool = False,
        writes: dict[str, Any] | None = None,
    ) -> None:
        self.variables = variables
        self.facts = facts or Facts()
        self.writable = writable
        self.writes: dict[str, Any] = {} if writes is None else writes

    def call(self, method: str, args: list[Any], allowed: frozenset[str]) -> Any:
        if method not in allowed:
            raise MethodError(f"'{method}' is not a method this object offers")
        if method in EXECUTION_WRITES and not self.writable:
            raise MethodError(f"'{method}' cannot be called here (no variables are written)")
        return EXECUTION_METHODS[method](self, *args)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        """Camunda's names for a bean's Python code: ``execution.setVariable("x", 1)``."""
        if method not in EXECUTION_METHODS:
            raise AttributeError(method)
        allowed = EXECUTION_READS | EXECUTION_WRITES
        return lambda *args: self.call(method, list(args), allowed)

    def get(self, name: Any) -> Any:
        _name(name)
        return self.writes[name] if name in self.writes else self.variables.get(name)

    def has(self, name: Any) -> bool:
        _name(name)
        return self.writes[name] is not None if name in self.writes else name in self.variables

    def set(self, name: Any, value: Any = None) -> None:
        self.writes[_name(name)] = plain(value)

    def everything(self) -> dict[str, Any]:
        return {**self.variables, **self.writes}

    def fact(self, value: str | None, what: str) -> str:
        if value is None:
            raise MethodError(f"the {what} is not known where this expression runs")
        return value


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise MethodError(f"a variable name is text, not {name!r:.40}")
    return name


EXECUTION_METHODS: Mapping[str, Callable[..., Any]] = {
    "getVariable": ExecutionView.get,
    "getVariableLocal": ExecutionView.get,
    "hasVariable": ExecutionView.has,
    "hasVariableLocal": ExecutionView.has,
    "getVariables": ExecutionView.everything,
    "setVariable": ExecutionView.set,
    "setVariableLocal": ExecutionView.set,
    "removeVariable": lambda ex, name: ex.set(name, None),
    "removeVariableLocal": lambda ex, name: ex.set(name, None),
    "getProcessInstanceId": lambda ex: ex.fact(ex.facts.instance_id, "process instance id"),
    "getProcessBusinessKey": lambda ex: ex.facts.business_key,
    "getBusinessKey": lambda ex: ex.facts.business_key,
    "getCurrentActivityId": lambda ex: ex.fact(ex.facts.activity_id, "current activity"),
    "getActivityInstanceId": lambda ex: ex.fact(ex.facts.activity_instance_id, "activity"),
    "getId": lambda ex: ex.fact(ex.facts.activity_instance_id, "execution id"),
    "getProcessDefinitionId": lambda ex: ex.fact(ex.facts.definition_id, "definition"),
    "getEventName": lambda ex: ex.facts.event,
    "getName": lambda ex: ex.facts.task_name,
    "getAssignee": lambda ex: ex.facts.assignee,
    "getTaskDefinitionKey": lambda ex: ex.fact(ex.facts.activity_id, "task definition key"),
}


@dataclass(frozen=True)
class Invocation:
    """What an expression run as a task sees besides the variables: its ``execution``, a
    task listener's ``task`` (sharing the execution's writes), the beans and the time."""

    execution: ExecutionView
    task: ExecutionView | None = None
    beans: BeanRegistry | None = None
    now: datetime | None = None


@dataclass(frozen=True)
class BeanRef:
    """A registered bean as an expression sees it: only its public methods can be called."""

    name: str
    obj: Any


def call_method(receiver: Any, method: str, args: list[Any], *, task: bool = False) -> Any:
    """Call an allowlisted ``method`` on ``receiver`` (``task``: the receiver is a task
    listener's ``task``); the result is bounded in size."""
    if isinstance(receiver, ExecutionView):
        allowed = TASK_METHODS if task else EXECUTION_READS | EXECUTION_WRITES
        result = receiver.call(method, args, allowed)
    elif isinstance(receiver, BeanRef):
        result = _call_bean(receiver, method, args)
    elif isinstance(receiver, DateTime | Spin | SpinXml | SpinAttribute):
        result = receiver.call(method, args)
    else:
        result = _value_method(receiver, method, args)
    if isinstance(result, str | list | dict) and len(result) > MAX_RESULT:
        raise MethodError(f"'{method}' gave a value longer than {MAX_RESULT}")
    return result


def _call_bean(bean: BeanRef, method: str, args: list[Any]) -> Any:
    fn = bean_method(bean.obj, method)
    if fn is None:
        raise MethodError(f"bean {bean.name!r} has no method {method!r}")
    return fn(*args)


def bean_method(obj: object, method: str) -> Callable[..., Any] | None:
    """A bean's public method by its Java name (``isValid``) or its Python one
    (``is_valid``); None when it has neither."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in method)
    found = [getattr(obj, n, None) for n in (method, snake) if not n.startswith("_")]
    return next((fn for fn in found if callable(fn)), None)


def getter_key(method: str) -> str | None:
    """``getTotal`` / ``isPaid`` -> ``total`` / ``paid``: the field a JavaBean getter reads,
    which on a JSON object (what a Java object is in bpm) is its key."""
    for prefix in ("get", "is"):
        rest = method.removeprefix(prefix)
        if method.startswith(prefix) and rest[:1].isupper():
            return rest[:1].lower() + rest[1:]
    return None


def _value_method(value: Any, method: str, args: list[Any]) -> Any:
    key = getter_key(method)
    if isinstance(value, dict) and key is not None and not args and method not in _MAP:
        if key not in value:
            raise MethodError(f"the object has no field {key!r} for {method}()")
        return value[key]
    table = (
        _STRING
        if isinstance(value, str)
        else _NUMBER
        if isinstance(value, int | float) and not isinstance(value, bool)
        else _MAP
        if isinstance(value, dict)
        else _LIST
        if isinstance(value, list | tuple)
        else {"equals": _STRING["equals"], "toString": _STRING["toString"]}
    )
    fn = table.get(method)
    if fn is None:
        raise MethodError(f"{type(value).__name__} value has no method '{method}'")
    try:
        return fn(value, *args)
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise MethodError(f"'{method}' failed: {exc}") from exc


def _text(value: Any) -> str:
    from bpm.definitions.mappings import as_text

    return as_text(value)


def _substring(s: str, start: int, end: int | None = None) -> str:
    stop = len(s) if end is None else end
    if not 0 <= start <= stop <= len(s):
        raise IndexError(f"begin {start}, end {stop}, length {len(s)}")
    return s[start:stop]


_STRING: Mapping[str, Callable[..., Any]] = {
    "equals": lambda s, o: s == o,
    "equalsIgnoreCase": lambda s, o: isinstance(o, str) and s.lower() == o.lower(),
    "contains": lambda s, o: str(o) in s,
    "startsWith": lambda s, o: s.startswith(o),
    "endsWith": lambda s, o: s.endswith(o),
    "isEmpty": lambda s: len(s) == 0,
    "isBlank": lambda s: not s.strip(),
    "length": len,
    "toUpperCase": str.upper,
    "toLowerCase": str.lower,
    "trim": str.strip,
    "substring": _substring,
    "indexOf": lambda s, o: s.find(o),
    "lastIndexOf": lambda s, o: s.rfind(o),
    "replace": lambda s, a, b: s.replace(a, b) if len(a) else s,
    "split": lambda s, sep: s.split(sep) if sep else list(s),
    "charAt": lambda s, i: s[i],
    "concat": lambda s, o: s + o,
    "toString": _text,
    "compareTo": lambda s, o: (s > o) - (s < o),
}
_NUMBER: Mapping[str, Callable[..., Any]] = {
    "intValue": int,
    "longValue": int,
    "doubleValue": float,
    "toString": _text,
    "equals": lambda n, o: n == o,
}
_LIST: Mapping[str, Callable[..., Any]] = {
    "size": len,
    "isEmpty": lambda v: len(v) == 0,
    "get": lambda v, i: v[i],
    "contains": lambda v, o: o in v,
    "indexOf": lambda v, o: list(v).index(o) if o in v else -1,
    "equals": lambda v, o: list(v) == o,
    "toString": _text,
    **DECISION_RESULT,
}
_MAP: Mapping[str, Callable[..., Any]] = {
    "size": len,
    "isEmpty": lambda v: len(v) == 0,
    "get": lambda v, k: v.get(k),
    "containsKey": lambda v, k: k in v,
    "containsValue": lambda v, o: o in v.values(),
    "keySet": lambda v: list(v),
    "values": lambda v: list(v.values()),
    "equals": lambda v, o: v == o,
    "toString": _text,
}
