"""The harness step language: each step text parsed into what to do (an ``Action``) and
what its annotations claim (``annotations.Note``).

``parse`` understands every form the corpus uses (the test module's docstring says what each
means) and raises ``NotUnderstood`` for any other, so a new step is never skipped silently.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from bpm.definitions.durations import parse_duration
from bpm.errors import BpmError
from tests.integration.conformance.annotations import InScopes, Named, Note, Typed, split
from tests.integration.conformance.annotations import NotUnderstood as NotUnderstood

# What a step does.


@dataclass(frozen=True)
class Start:
    """``start`` and its forms; ``data``: what a Spiff step sets on the start task."""

    business_key: str | None = None
    data: dict[str, Any] | None = None


@dataclass(frozen=True)
class StartProcess:
    process: str


@dataclass(frozen=True)
class Complete:
    target: str
    variables: dict[str, Any] | None = None


@dataclass(frozen=True)
class Correlate:
    message: str


@dataclass(frozen=True)
class Broadcast:
    signal: str


@dataclass(frozen=True)
class SetVariables:
    process: str | None
    values: dict[str, Any]


@dataclass(frozen=True)
class RunDue:
    """Fire the timers that are due and run the jobs."""


@dataclass(frozen=True)
class PassTime:
    """Move the clock by ``amount`` (from the start with ``from_start``); then, with
    ``fire``, fire the due timers and run the jobs."""

    amount: timedelta
    from_start: bool = False
    fire: bool = True


@dataclass(frozen=True)
class FireTimer:
    node: str | None = None


@dataclass(frozen=True)
class ExpectActive:
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class ExpectOpen:
    """A count of the wait states (Spiff's WAITING / READY tasks)."""

    count: int


@dataclass(frozen=True)
class ExpectEnded:
    pass


@dataclass(frozen=True)
class ExpectNotReady:
    node: str


@dataclass(frozen=True)
class ExpectJobs:
    count: int
    timers_only: bool


@dataclass(frozen=True)
class ExpectIncident:
    node: str


@dataclass(frozen=True)
class ExpectEndActivity:
    node: str


@dataclass(frozen=True)
class ExpectInstances:
    node: str
    count: int


@dataclass(frozen=True)
class ExpectInstanceVariable:
    node: str
    name: str
    value: Any


@dataclass(frozen=True)
class ExpectVariables:
    process: str | None
    values: dict[str, Any]


@dataclass(frozen=True)
class ExpectBusinessKey:
    process: str
    key: str


@dataclass(frozen=True)
class ExpectProcessInstances:
    process: str
    count: int


@dataclass(frozen=True)
class Prose:
    """A step that says nothing this engine can check; ``reason`` says why."""

    reason: str


Action = (
    Start
    | StartProcess
    | Complete
    | Correlate
    | Broadcast
    | SetVariables
    | RunDue
    | PassTime
    | FireTimer
    | ExpectActive
    | ExpectOpen
    | ExpectEnded
    | ExpectNotReady
    | ExpectJobs
    | ExpectIncident
    | ExpectEndActivity
    | ExpectInstances
    | ExpectInstanceVariable
    | ExpectVariables
    | ExpectBusinessKey
    | ExpectProcessInstances
    | Prose
)


@dataclass(frozen=True)
class Step:
    text: str
    action: Action
    notes: tuple[Note, ...] = field(default=())


#: Steps that say nothing this engine can check, with the reason.
PROSE_STEPS = {
    "expect 3 executions (2 concurrent branches)": (
        "Camunda execution-tree internals; the active tasks are checked instead"
    ),
}
_TARGET = r"'[^']*'|[\w.-]+(?:/[\w.-]+)?"
_OBJECT = r"\{.*\}"


@dataclass(frozen=True)
class Raw:
    """A value of a Spiff data literal that is no Python literal (``now+0.01s``)."""

    text: str


def _json(text: str) -> dict[str, Any]:
    """A JSON object (``{…}`` in the README's steps)."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise NotUnderstood(f"not an object: {text}")
    return value


def _object(text: str) -> dict[str, Any]:
    """A JSON object, or a Spiff data literal (``{choice: 'Yes'}``: bare keys, Python values;
    a value that is no literal, like ``now+0.01s``, is kept as ``Raw`` text)."""
    try:
        return _json(text)
    except json.JSONDecodeError:
        pairs = re.findall(r"(\w+)\s*:\s*([^,}]+)", text)
        if not pairs:
            raise NotUnderstood(f"not an object: {text}") from None
        return {key: _literal(raw.strip()) for key, raw in pairs}


def _literal(raw: str) -> Any:
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return Raw(raw)


def _duration(text: str) -> timedelta:
    return parse_duration(text, where="harness step", element=None)


def _name(text: str) -> str:
    return str(json.loads(text)) if text.startswith('"') else text


def _nodes(listed: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in listed.split(",") if n.strip())


Builder = Callable[[re.Match[str]], Action]
_RUN_DUE = r"run engine steps|run due jobs|refresh_timers|wait for '\w+'|execute available jobs.*"
#: Each step form (matched against the whole step) and what it does.
GRAMMAR: list[tuple[str, Builder]] = [
    (r"start|start with inputs|execute|execute again|run definition", lambda m: Start()),
    (r"start with business key (.+)", lambda m: Start(business_key=_name(m[1]))),
    (rf"set data ({_OBJECT}) on the start task", lambda m: Start(data=_object(m[1]))),
    (r"start_process (\S+)", lambda m: StartProcess(m[1])),
    (
        rf"(?:complete|signal) ({_TARGET})(?: with(?: data)? ({_OBJECT}))?",
        lambda m: Complete(m[1], _object(m[2]) if m[2] else None),
    ),
    (r"correlate (\S+)", lambda m: Correlate(m[1])),
    (r"broadcast (\S+)", lambda m: Broadcast(m[1])),
    (rf"set_variables(?: in (\S+))? ({_OBJECT})", lambda m: SetVariables(m[1], _json(m[2]))),
    (_RUN_DUE, lambda m: RunDue()),
    (r"advance_clock \+(\S+)", lambda m: PassTime(_duration(m[1]))),
    (r"advance_clock to start\+(\S+)", lambda m: PassTime(_duration(m[1]), from_start=True)),
    (r"do not signal; (\S+) timer fires", lambda m: PassTime(_duration(m[1]))),
    (r"sleep ([\d.]+) s", lambda m: PassTime(timedelta(seconds=float(m[1])), fire=False)),
    (r"fire timer job(?: \((\S+)\))?", lambda m: FireTimer(m[1])),
    (
        r"expect_active \[([^\]]*)\]|expect activity tree \[([^\]]*)\]",
        lambda m: ExpectActive(_nodes(m[1] if m[1] is not None else m[2])),
    ),
    (rf"expect ({_TARGET}) postponed", lambda m: ExpectActive((m[1],))),
    (r"expect no READY/WAITING tasks", lambda m: ExpectActive(())),
    (r"expect (?:still )?(\d+) WAITING(?: task)?", lambda m: ExpectOpen(int(m[1]))),
    (r"expect (\d+) READY tasks", lambda m: ExpectOpen(int(m[1]))),
    (r"expect_ended", lambda m: ExpectEnded()),
    (rf"expect_not_ready ({_TARGET})", lambda m: ExpectNotReady(m[1])),
    (
        r"expect (\d+|one) (timer )?jobs?",
        lambda m: ExpectJobs(1 if m[1] == "one" else int(m[1]), m[2] is not None),
    ),
    (r"expect one incident on (\S+)", lambda m: ExpectIncident(m[1])),
    (r"historic end activity == (\S+)", lambda m: ExpectEndActivity(m[1])),
    (rf"expect_instances ({_TARGET}) (\d+)", lambda m: ExpectInstances(m[1], int(m[2]))),
    (
        rf"expect_instance_variable ({_TARGET}) (\w+) == (.+)",
        lambda m: ExpectInstanceVariable(m[1], m[2], json.loads(m[3])),
    ),
    (
        rf"expect_variables(?: in (\S+))? ({_OBJECT})",
        lambda m: ExpectVariables(m[1], _json(m[2])),
    ),
    (r"expect_business_key (\S+) (.+)", lambda m: ExpectBusinessKey(m[1], _name(m[2]))),
    (r"expect_process_instances (\S+) (\d+)", lambda m: ExpectProcessInstances(m[1], int(m[2]))),
]


def _action(text: str) -> Action | None:
    for pattern, build in GRAMMAR:
        if match := re.fullmatch(pattern, text):
            try:
                return build(match)
            except (ValueError, BpmError) as exc:  # a value that is no JSON, no duration
                raise NotUnderstood(f"harness step not understood: {text!r}: {exc}") from None
    return None


def parse(text: str) -> Step:
    """The step ``text`` means; ``NotUnderstood`` when it is no form the harness knows, or
    carries an annotation that says nothing about its kind of step."""
    if text in PROSE_STEPS:
        return Step(text, Prose(PROSE_STEPS[text]))
    action = _action(text)
    if action is not None:
        return Step(text, action)
    body, notes = split(text)
    action = _action(body)
    if action is None:
        raise NotUnderstood(f"harness step not understood: {text!r}")
    for note in notes:
        if isinstance(note, InScopes) and not isinstance(action, ExpectActive):
            raise NotUnderstood(f"scopes of something not listed as active: {text!r}")
        if isinstance(note, Named | Typed) and not isinstance(action, Complete):
            raise NotUnderstood(f"a name or element of no completed activity: {text!r}")
    return Step(text, action, tuple(notes))
