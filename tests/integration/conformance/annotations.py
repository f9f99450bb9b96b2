"""What a step's annotations claim: a trailing ``(…)``, ``inside S``, ``-> raises …``.

Each annotation is either checked after its step (``NotFired``, ``InScopes``, ``Named``,
``Typed``, ``RaisesError``) or a ``Comment`` listed in ``COMMENTS`` with the reason it says
nothing more to check; any other annotation is not understood.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class NotUnderstood(AssertionError):
    """A step (or part of one) the harness does not understand."""


@dataclass(frozen=True)
class NotFired:
    """``(J must not fire)``: no token has left ``J`` (a join) yet."""

    node: str


@dataclass(frozen=True)
class InScopes:
    """``inside S`` / ``(scopes A > B)``: each listed activity runs inside these scopes
    (outermost first); ``exact``: these and no others."""

    scopes: tuple[str, ...]
    exact: bool


@dataclass(frozen=True)
class Named:
    """``('Cancel Hotel')``: the activity's name."""

    name: str


@dataclass(frozen=True)
class Typed:
    """``(receiveTask)``: the activity's element."""

    type: str


@dataclass(frozen=True)
class RaisesError:
    """``-> raises …``: after the step the run is in error."""


@dataclass(frozen=True)
class Comment:
    reason: str


Note = NotFired | InScopes | Named | Typed | RaisesError | Comment


#: Annotations that are commentary, with the reason they say nothing more to check.
COMMENTS = {
    "returns: theServiceTask is camunda:async": "Camunda's start returns before the async "
    "task runs; here every task runs as a job after start returns",
    "serviceTask throws BpmnError '23'": "restates failing_tasks, which the handlers follow",
    "the timer": "says what the counted wait state is; the count is checked",
    "timers only move on refresh_timers": "says why the count is unchanged; it is checked",
    "end event waits for the handler": "says why the end event is listed; the list is checked",
    "type failedJob": "Camunda's incident type; the incident's activity is checked",
    "userTask before the throw event": "says what the completed task is",
    "waiting": "restates 'postponed'; the wait state is checked",
    "single task": "restates the one-element list, which is checked",
}
#: Spiff's READY ("fired, not yet run"): a fired timer moves its token on in the same
#: transaction here, so only the WAITING count of ``expect N WAITING, M READY`` is checked.
SPIFF_READY = "Spiff's READY (a fired timer not yet run) has no counterpart: WAITING is checked"
ELEMENTS = {"userTask", "receiveTask", "serviceTask", "manualTask", "task", "sendTask"}


def _note(text: str) -> Note:
    if text in COMMENTS:
        return Comment(COMMENTS[text])
    if match := re.fullmatch(r"(\S+) must not fire", text):
        return NotFired(match[1])
    if match := re.fullmatch(r"scopes (\w+(?: > \w+)*)", text):
        return InScopes(tuple(match[1].split(" > ")), exact=True)
    if match := re.fullmatch(r"'([^']*)'", text):
        return Named(match[1])
    if text in ELEMENTS:
        return Typed(text)
    raise NotUnderstood(f"annotation not understood: ({text})")


def split(text: str) -> tuple[str, list[Note]]:
    """The step without its annotations, and what they claim."""
    notes: list[Note] = []
    if match := re.fullmatch(r"(.*?) -> raises \w+", text):
        text = match[1]
        notes.append(RaisesError())
    if match := re.fullmatch(r"(.*?)\s*\(([^()]*)\)", text):
        text = match[1]
        notes.append(_note(match[2]))
    if match := re.fullmatch(r"(expect_active \[.*\]) inside (\S+)", text):
        text = match[1]
        notes.append(InScopes((match[2],), exact=False))
    if match := re.fullmatch(r"(expect one incident) \(([^)]*)\) (on \S+)", text):
        text = f"{match[1]} {match[3]}"
        notes.append(_note(match[2]))
    if match := re.fullmatch(r"(expect \d+ WAITING), \d+ READY", text):
        text = match[1]
        notes.append(Comment(SPIFF_READY))
    return text, notes
