"""An operator's action on an incident (retry, resolve, cancel its instance), done through the
engine's facade as that operator: the history rows it writes name the operator as their
actor and the cockpit action as their cause."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import TypeVar

from bpm.api import BpmError, Engine, FoundIncident, acting_as, because
from bpm_server.runtime import ServerRuntime

T = TypeVar("T")


class Action(StrEnum):
    RETRY = "retry"
    RESOLVE = "resolve"
    CANCEL = "cancel"


@dataclass
class Outcome:
    """How many incidents an action was done on, and why the others were not."""

    done: int = 0
    refused: list[str] = field(default_factory=list)


def as_operator(runtime: ServerRuntime, operator: str, what: str, call: Callable[[], T]) -> T:
    """Run ``call`` (an engine change) with ``operator`` as the actor of its history rows;
    the steps it makes due run afterwards as the engine's own."""

    def attributed() -> T:
        with acting_as(operator), because(f"cockpit {what} by {operator}"):
            return call()

    return runtime.run(attributed)


def _one(engine: Engine, action: Action, found: FoundIncident) -> None:
    incident = found.incident
    match action:
        case Action.RETRY:
            engine.retry(incident.token_id or incident.task_id or incident.id)
        case Action.RESOLVE:
            engine.resolve(incident.id, "resolved on the cockpit")
        case Action.CANCEL:
            engine.cancel(incident.instance_id, "cancelled on the cockpit")


def act(
    runtime: ServerRuntime, operator: str, action: Action, incidents: Iterable[FoundIncident]
) -> Outcome:
    """``action`` on each incident, one transaction each; one refused does not stop the rest."""
    outcome = Outcome()
    cancelled: set[object] = set()
    for found in incidents:
        if action is Action.CANCEL and found.incident.instance_id in cancelled:
            outcome.done += 1  # its instance was cancelled for an earlier incident
            continue
        try:
            what = f"{action} incident {found.incident.id}"
            as_operator(runtime, operator, what, partial(_one, runtime.engine, action, found))
        except BpmError as exc:
            outcome.refused.append(f"{found.incident.id}: {exc}")
            continue
        cancelled.add(found.incident.instance_id)
        outcome.done += 1
    return outcome
