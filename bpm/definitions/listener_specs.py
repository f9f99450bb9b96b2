"""What a listener is in the compiled graph: when it runs and which handler runs then."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bpm.definitions.code import Code
from bpm.definitions.mappings import VariableMapping
from bpm.definitions.timers import TimerSpec


class ListenerEvent(StrEnum):
    """When a listener runs: a node's ``start`` (before its own work) and ``end`` (after it,
    before the token leaves); a flow's ``take`` (before the token arrives); a user task's
    ``assignment`` and ``create`` (when it is made: assignment first, then create, as in
    Camunda), ``complete`` (after it is completed, before it ends) and ``delete`` (when an
    interrupting boundary event takes it away, before the node's ``end`` listeners)."""

    START = "start"
    END = "end"
    #: A sequence flow's: when a token takes it, before the token arrives at its target.
    TAKE = "take"
    ASSIGNMENT = "assignment"
    CREATE = "create"
    COMPLETE = "complete"
    DELETE = "delete"
    #: An open user task's assignee changed (a claim or unclaim); before ``assignment``.
    UPDATE = "update"
    #: A user task's timer fired while the task is still open (the task stays open).
    TIMEOUT = "timeout"


#: A user task's listener events that can run under a token beside the task's (a claim's).
BESIDE_EVENTS = (ListenerEvent.UPDATE, ListenerEvent.ASSIGNMENT)


@dataclass(frozen=True)
class Listener:
    """A handler that runs at a node's event, as a step of its own (retried and failing
    with an incident like a handler task), with its own fields."""

    event: ListenerEvent
    handler: str
    fields: tuple[VariableMapping, ...] = ()
    #: A ``timeout`` listener's timer, counted from when its user task is created.
    timer: TimerSpec | None = None
    #: An expression, bean or script run in place of a registered handler.
    code: Code | None = None
