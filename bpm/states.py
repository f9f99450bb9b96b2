"""Every state, kind, mode and history event type the engine writes, defined once.

The schema's CHECK constraints, replay and the engine's comparisons are all built from these
enums, so they cannot drift apart (``tests/migration/test_enum_drift.py`` checks the database
against them). They are ``StrEnum``: a member is the string stored in its column, so rows read
back compare equal to it.
"""

from __future__ import annotations

from enum import StrEnum


class InstanceState(StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TERMINATED = "TERMINATED"
    CANCELLED = "CANCELLED"


#: An instance in these states still has work that may run.
LIVE_INSTANCE = frozenset({InstanceState.RUNNING, InstanceState.FAILED})
#: An instance in these states has ended for good.
ENDED_INSTANCE = frozenset(
    {InstanceState.COMPLETED, InstanceState.TERMINATED, InstanceState.CANCELLED}
)


class TokenState(StrEnum):
    ACTIVE = "ACTIVE"
    WAITING = "WAITING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


#: A token in these states is still part of its instance's work.
LIVE_TOKEN = frozenset({TokenState.ACTIVE, TokenState.WAITING, TokenState.FAILED})
#: A token in one of these has left its node for good.
ENDED_TOKEN = frozenset({TokenState.COMPLETED, TokenState.CANCELLED})


class TokenMode(StrEnum):
    FORWARD = "FORWARD"
    COMPENSATION = "COMPENSATION"


class WaitKind(StrEnum):
    """What a WAITING token waits for."""

    TASK = "TASK"
    CHILDREN = "CHILDREN"
    JOIN = "JOIN"
    TIMER = "TIMER"
    MESSAGE = "MESSAGE"
    USER = "USER"
    COMPENSATING = "COMPENSATING"
    #: A call activity's token: the instance it started runs until it ends.
    CALLED = "CALLED"
    #: At an event-based gateway: the first of the events after it wins.
    EVENT = "EVENT"
    #: At a conditional catch event: until its condition holds after a variable change.
    CONDITION = "CONDITION"
    #: At a signal intermediate catch event: a signal of its name, thrown after it waited.
    SIGNAL = "SIGNAL"


class SignalTarget(StrEnum):
    """What a definition's signal subscription (and a delivery of a thrown signal) reaches."""

    #: A signal start event: a new instance of the definition's latest version.
    START = "START"
    #: A token WAITING at the node: a signal catch, an activity with a signal boundary, an
    #: event-based gateway before a signal event, a subprocess with a signal event subprocess.
    NODE = "NODE"
    #: The instance's root token, whatever it is at: the process's signal event subprocess.
    ROOT = "ROOT"
    #: A delivery to one token (NODE or ROOT, found by the throw's snapshot).
    TOKEN = "TOKEN"


class LinkType(StrEnum):
    FORK = "FORK"
    SUBPROCESS = "SUBPROCESS"
    JOIN = "JOIN"
    COMPENSATION = "COMPENSATION"


class TaskState(StrEnum):
    READY = "READY"
    LOCKED = "LOCKED"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class TaskKind(StrEnum):
    HANDLER = "HANDLER"
    EXTERNAL = "EXTERNAL"
    USER = "USER"


class TimerState(StrEnum):
    SCHEDULED = "SCHEDULED"
    FIRED = "FIRED"
    CANCELLED = "CANCELLED"


class RecordState(StrEnum):
    """A compensation record's status."""

    PENDING = "PENDING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    #: Its compensation was under way or still to come when its token or saga was cancelled.
    CANCELLED = "CANCELLED"


class IncidentState(StrEnum):
    OPEN = "OPEN"
    RESOLVED = "RESOLVED"


class Role(StrEnum):
    """What an API credential may do (``bpm credentials add --role``)."""

    #: Fetch and report the external tasks of its topics (all topics when none are named).
    WORKER = "WORKER"
    #: Start and correlate the processes it names (all when none are named).
    STARTER = "STARTER"
    #: Read everything, change nothing.
    VIEWER = "VIEWER"
    #: Everything.
    OPERATOR = "OPERATOR"


# --- history event types: the ``type`` of each history table's rows ----------------------


class TokenEvent(StrEnum):
    CREATED = "CREATED"
    MOVED = "MOVED"
    WAITING = "WAITING"
    FORKED = "FORKED"
    ARRIVED_AT_JOIN = "ARRIVED_AT_JOIN"
    JOINED = "JOINED"
    ENTERED_SUBPROCESS = "ENTERED_SUBPROCESS"
    #: A call activity started an instance (``data.instance``) and waits for it.
    CALLED = "CALLED"
    TIMER_FIRED = "TIMER_FIRED"
    #: A message boundary event on the activity the token is at received its message.
    MESSAGE_RECEIVED = "MESSAGE_RECEIVED"
    #: A signal boundary event (or the signal event after an event-based gateway) received
    #: a broadcast signal.
    SIGNAL_RECEIVED = "SIGNAL_RECEIVED"
    #: An escalation boundary event caught an escalation from inside the activity.
    ESCALATED = "ESCALATED"
    #: A conditional event's condition held (a catch passed, a boundary or start fired).
    CONDITION_MET = "CONDITION_MET"
    #: A non-interrupting boundary started a path beside the activity the token is at.
    SPAWNED = "SPAWNED"
    ERROR_THROWN = "ERROR_THROWN"
    ERROR_CAUGHT = "ERROR_CAUGHT"
    COMPENSATION_THROWN = "COMPENSATION_THROWN"
    COMPENSATED = "COMPENSATED"
    SAGA_COMPLETED = "SAGA_COMPLETED"
    #: A transaction's cancel boundary event took the token, once the cancel end event's
    #: compensation inside the transaction was done.
    TRANSACTION_CANCELLED = "TRANSACTION_CANCELLED"
    RETRIED = "RETRIED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class TaskEvent(StrEnum):
    CREATED = "CREATED"
    LOCKED = "LOCKED"
    LOCK_EXTENDED = "LOCK_EXTENDED"
    LOCK_EXPIRED = "LOCK_EXPIRED"
    UNLOCKED = "UNLOCKED"
    CLAIMED = "CLAIMED"
    UNCLAIMED = "UNCLAIMED"
    #: A task listener changed a user task's candidates, dates or priority (``data.changes``).
    UPDATED = "UPDATED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    BPMN_ERROR = "BPMN_ERROR"
    RETRIED = "RETRIED"
    CANCELLED = "CANCELLED"


class EngineEvent(StrEnum):
    DEFINITION_DEPLOYED = "DefinitionDeployed"
    INSTANCE_STARTED = "InstanceStarted"
    INSTANCE_COMPLETED = "InstanceCompleted"
    INSTANCE_FAILED = "InstanceFailed"
    INSTANCE_RESUMED = "InstanceResumed"
    INSTANCE_TERMINATED = "InstanceTerminated"
    INSTANCE_CANCELLED = "InstanceCancelled"
    VARIABLES_CHANGED = "VariablesChanged"
    #: Variables removed by a caller (``data.names``); history alone still rebuilds them.
    VARIABLES_DELETED = "VariablesDeleted"
    LOCAL_VARIABLES_SET = "LocalVariablesSet"
    LOCAL_VARIABLES_ENDED = "LocalVariablesEnded"
    TIMER_SCHEDULED = "TimerScheduled"
    TIMER_FIRED = "TimerFired"
    TIMER_CANCELLED = "TimerCancelled"
    INCIDENT_OPENED = "IncidentOpened"
    INCIDENT_RESOLVED = "IncidentResolved"
    TOKEN_FAILED = "TokenFailed"
    JOIN_FIRED = "JoinFired"
    SUBPROCESS_COMPLETED = "SubprocessCompleted"
    SCOPE_TERMINATED = "ScopeTerminated"
    MESSAGE_CORRELATED = "MessageCorrelated"
    BPMN_ERROR_CAUGHT = "BpmnErrorCaught"
    #: A BPMN error no boundary of this instance catches went up to its caller's call
    #: activity (``data``: code, message, where it was thrown); the instance was cancelled.
    BPMN_ERROR_PROPAGATED = "BpmnErrorPropagated"
    OPERATOR_RETRY = "OperatorRetry"
    OPERATOR_RESOLVED = "OperatorResolved"
    SAGA_STARTED = "SagaStarted"
    SAGA_COMPLETED = "SagaCompleted"
    COMPENSATION_RECORDED = "CompensationRecorded"
    COMPENSATION_TOKEN_CREATED = "CompensationTokenCreated"
    COMPENSATION_THROWN = "CompensationThrown"
    ESCALATION_THROWN = "EscalationThrown"
    #: An escalation nothing in this instance catches went up to its caller's call activity
    #: (``data``: code, ``interrupting``: whether the catcher up there ends this instance).
    ESCALATION_PROPAGATED = "EscalationPropagated"
    #: The caller took one of this instance's propagated escalations (written by the
    #: caller's transaction into this instance's history, one per propagated escalation).
    ESCALATION_RECEIVED = "EscalationReceived"
    COMPENSATION_DONE = "CompensationDone"
    COMPENSATION_COMPLETED = "CompensationCompleted"
    COMPENSATION_FAILED = "CompensationFailed"
    COMPENSATION_CANCELLED = "CompensationCancelled"
    #: A cancel end event was reached in a transaction (``data.transaction``): its other
    #: work is cancelled and what it completed is compensated before its cancel boundary.
    TRANSACTION_CANCELLED = "TransactionCancelled"
    DECISION_DEPLOYED = "DecisionDeployed"
    DECISION_EVALUATED = "DecisionEvaluated"
    DEPLOYMENT_DELETED = "DeploymentDeleted"
    #: A signal was broadcast from this instance (``data``: name, signal id, recipients).
    SIGNAL_THROWN = "SignalThrown"
    #: A broadcast signal reached a subscription of this instance (``data``: name, variables).
    SIGNAL_RECEIVED = "SignalReceived"


def values(enum: type[StrEnum]) -> tuple[str, ...]:
    """The stored strings of an enum, in definition order (for CHECK constraints)."""
    return tuple(member.value for member in enum)
