"""The compiled, immutable form of a definition that the engine walks.

A definition row is immutable, so its compiled graph can be cached by definition id for the
life of a process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from functools import cached_property
from typing import Any

from bpm.definitions.assignments import Text
from bpm.definitions.code import Code
from bpm.definitions.conditions import Condition
from bpm.definitions.forms import FormSpec
from bpm.definitions.listener_specs import BESIDE_EVENTS
from bpm.definitions.listener_specs import Listener as Listener
from bpm.definitions.listener_specs import ListenerEvent as ListenerEvent
from bpm.definitions.mappings import VariableMapping
from bpm.definitions.model_refs import CallBinding as CallBinding
from bpm.definitions.model_refs import CallMapping as CallMapping
from bpm.definitions.model_refs import CallSpec as CallSpec
from bpm.definitions.model_refs import DecisionBinding as DecisionBinding
from bpm.definitions.model_refs import DecisionRef as DecisionRef
from bpm.definitions.multi_instance import MultiInstance as MultiInstance
from bpm.definitions.policies import Compensation as Compensation
from bpm.definitions.policies import RetryPolicy as RetryPolicy
from bpm.definitions.timers import TimerSpec
from bpm.expressions import Expression


class NodeType(StrEnum):
    START = "startEvent"
    END = "endEvent"
    SERVICE_TASK = "serviceTask"
    USER_TASK = "userTask"
    RECEIVE_TASK = "receiveTask"
    TASK = "task"
    MANUAL_TASK = "manualTask"
    EXCLUSIVE = "exclusiveGateway"
    PARALLEL = "parallelGateway"
    INCLUSIVE = "inclusiveGateway"
    #: Waits for the first of the events its flows lead to (message, timer).
    EVENT_GATEWAY = "eventBasedGateway"
    TIMER = "timerEvent"
    MESSAGE = "messageEvent"
    #: An intermediate conditional catch event: waits until its condition holds.
    CONDITIONAL = "conditionalEvent"
    COMPENSATION_THROW = "compensationThrow"
    #: An intermediate escalation throw event: it escalates, then the token goes on.
    ESCALATION_THROW = "escalationThrow"
    BOUNDARY = "boundaryEvent"
    SIGNAL = "signalEvent"  # an intermediate signal catch event
    SIGNAL_THROW = "signalThrow"  # an intermediate signal throw event
    SUBPROCESS = "subProcess"
    CALL_ACTIVITY = "callActivity"


GATEWAYS = frozenset(
    {NodeType.EXCLUSIVE, NodeType.PARALLEL, NodeType.INCLUSIVE, NodeType.EVENT_GATEWAY}
)
PASS_THROUGH = frozenset({NodeType.START, NodeType.TASK, NodeType.MANUAL_TASK})
#: Activities with work of their own (a task, a wait, a scope); a task or manual task,
#: which a token passes at once, is not one of them.
ACTIVITIES = frozenset(
    {
        NodeType.SERVICE_TASK,
        NodeType.USER_TASK,
        NodeType.RECEIVE_TASK,
        NodeType.SUBPROCESS,
        NodeType.CALL_ACTIVITY,
    }
)
#: Nodes that may be multi-instance: the activities, and a task or manual task, whose
#: iterations each pass at once (as in Camunda 7).
MULTI_INSTANCE_NODES = ACTIVITIES | {NodeType.TASK, NodeType.MANUAL_TASK}
#: Nodes whose token waits for a body of tokens of its own (``scope_id`` = the node's id):
#: the one list ``Node.is_scope`` reads, so a new kind of scope is added here.
SCOPES = frozenset({NodeType.SUBPROCESS})


@dataclass(frozen=True)
class Flow:
    id: str
    source: str
    target: str
    condition: Expression | None = None
    #: ``take`` listeners, run in order when a token takes the flow.
    listeners: tuple[Listener, ...] = ()


@dataclass(frozen=True)
class Node:
    id: str
    type: NodeType
    scope: str | None
    incoming: tuple[str, ...] = ()
    outgoing: tuple[str, ...] = ()
    handler: str | None = None
    topic: str | None = None
    attached_to: str | None = None
    catches: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: timedelta = timedelta(minutes=5)
    default_flow: str | None = None
    terminate: bool = False
    error_code: str | None = None
    #: endEvent throwing an error: its message (the declaration's ``camunda:errorMessage``).
    error_message: str | None = None
    name: str | None = None
    priority: int = 0
    #: timerEvent, or a timer boundaryEvent: when it fires.
    timer: TimerSpec | None = None
    #: Boundary events: whether firing leaves the activity (non-interrupting spawns a token).
    interrupting: bool = True
    #: receiveTask, messageEvent, a message boundary event and a message start event: the
    #: message name they wait for.
    message: str | None = None
    #: userTask: who has it and who may claim it (names, or expressions evaluated when the
    #: task is created, as are its dates and a priority expression).
    assignee: Text | None = None
    candidate_groups: tuple[Text, ...] = ()
    #: Activities: how to undo them once they succeeded (a record is written then).
    compensation: Compensation | None = None
    #: subProcess: its saga scope (none, local, global).
    saga: str = "none"
    #: subProcess: a transaction (a cancel end event inside compensates it, then leaves it
    #: by its cancel boundary: ``bpm.definitions.transactions``).
    transaction: bool = False
    #: endEvent: a cancel end event (in a transaction); boundaryEvent: a cancel boundary.
    cancel: bool = False
    #: compensationThrow / compensating endEvent: compensate only this activity.
    activity: str | None = None
    #: endEvent: a compensation end event.
    compensate: bool = False
    #: compensationThrow / compensating endEvent: whether the token waits for the
    #: compensation (BPMN's default) or goes on while it runs.
    wait_for_completion: bool = True
    #: A handler activity for another activity's compensation (never entered by the flow).
    for_compensation: bool = False
    #: Activities and subprocesses: local variables made on entry, results copied out at the
    #: end (``bpm.definitions.mappings``).
    inputs: tuple[VariableMapping, ...] = ()
    outputs: tuple[VariableMapping, ...] = ()
    #: ``properties``: name -> text (a list for a name given several times), without
    #: behaviour (shown to people, given to workers).
    properties: Mapping[str, str | list[str]] = field(default_factory=dict)
    #: startEvent: the variable that receives the id of the user who started the instance.
    initiator: str | None = None
    #: serviceTask: configuration the handler reads as ``ctx.fields`` (text or expressions).
    fields: tuple[VariableMapping, ...] = ()
    #: serviceTask whose topic has ``${...}``: evaluated for each task it creates.
    topic_expression: VariableMapping | None = None
    #: serviceTask with a handler or a decision: the variable that receives its whole result.
    result_variable: str | None = None
    #: A connector's output parameters: evaluated over the handler's result (and the
    #: variables), they are the only variables the task sets. None: not a connector.
    connector_outputs: tuple[VariableMapping, ...] | None = None
    #: serviceTask evaluating a DMN decision (a business rule task) instead of running code.
    decision: DecisionRef | None = None
    #: serviceTask: an expression, bean or script run in place of a registered handler.
    code: Code | None = None
    candidate_users: tuple[Text, ...] = ()
    due_date: Text | None = None
    follow_up_date: Text | None = None
    priority_expression: Expression | None = None
    #: userTask and startEvent: the form (key or reference, and the fields checked when the
    #: task is completed, or the start form submitted).
    form: FormSpec | None = None
    #: Error boundary events: the variables that receive the caught error's code and message.
    error_code_variable: str | None = None
    error_message_variable: str | None = None
    #: An escalation end or throw event: the code it escalates; an escalation boundary
    #: event or event subprocess start: the code it catches, or ``"*"`` for any.
    escalation: str | None = None
    #: An escalation catch: the variable that receives the caught code.
    escalation_code_variable: str | None = None
    #: Listeners, in the order they run for their event.
    listeners: tuple[Listener, ...] = ()
    #: A signal event's name (docs/bpmn.md#signals); a throw's may be an expression, and its
    #: ``in`` variables (as a call activity's) go to the recipients.
    signal: str | None = None
    signal_expression: VariableMapping | None = None
    signal_inputs: tuple[CallMapping, ...] = ()
    #: callActivity: the process it starts and what crosses the call.
    call: CallSpec | None = None
    #: subProcess: an event subprocess (``triggeredByEvent``), started by its start event's
    #: trigger (error, message, timer) while its scope runs, never by a flow.
    triggered_by_event: bool = False
    #: Activities: run once per iteration, in parallel or in sequence (a marker, not a type).
    multi_instance: MultiInstance | None = None
    #: A conditional catch or boundary event, or event subprocess start: what it waits for.
    condition: Condition | None = None

    def listeners_of(self, event: ListenerEvent) -> tuple[Listener, ...]:
        if not self.listeners:  # most nodes have none: asked on every arrival and leave
            return ()
        return tuple(listener for listener in self.listeners if listener.event is event)

    @property
    def is_scope(self) -> bool:
        """Whether a token here waits for a body of its own: its records cover what ran
        inside, an interruption cancels that body, a terminate inside ends at it. A
        multi-instance activity's token is one: its body waits for its iterations."""
        return self.type in SCOPES or self.multi_instance is not None

    @property
    def is_join(self) -> bool:
        return self.type in _JOINS and len(self.incoming) > 1

    @property
    def is_fork(self) -> bool:
        return self.type is NodeType.PARALLEL and len(self.outgoing) > 1


#: Gateways whose incoming flows meet: a parallel one waits for every flow, an inclusive one
#: for every token that can still reach it.
_JOINS = frozenset({NodeType.PARALLEL, NodeType.INCLUSIVE})


def _error_code(node: Node) -> str | None:
    return node.catches


def by_code(
    candidates: list[Node], code: str, catches: Callable[[Node], str | None]
) -> Node | None:
    """The first of ``candidates`` that catches ``code`` itself, else the first catch-all
    (``"*"``): a specific catch wins over a general one, for errors and escalations alike."""
    for wanted in (code, "*"):
        for node in candidates:
            if catches(node) == wanted:
                return node
    return None


@dataclass(frozen=True)
class ProcessGraph:
    """Nodes of every scope in one map (ids are unique across the document)."""

    key: str
    name: str
    saga: str
    nodes: dict[str, Node]
    flows: dict[str, Flow]
    starts: dict[str | None, str]
    document: dict[str, Any]
    boundaries: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: ``historyTimeToLive``: how long an ended instance is kept; None: the installation's
    #: default (``BPM_HISTORY_TTL_DAYS``), or for ever.
    history_ttl: timedelta | None = None
    #: The process's own ``end`` listeners: they run when the instance ends (its last path
    #: completed, or a terminate end event at process level), before it is COMPLETED.
    end_listeners: tuple[Listener, ...] = ()
    #: The process's message start events: message name -> start event id (a correlation
    #: that no waiting token takes starts an instance there).
    message_starts: dict[str, str] = field(default_factory=dict)
    #: The process's timer start events (their ids): the timer scan starts an instance at
    #: each when its timer is due.
    timer_starts: tuple[str, ...] = ()
    #: Conditional start events, where ``Engine.evaluate_conditions`` starts instances.
    conditional_starts: tuple[str, ...] = ()
    #: Whether a node waits for a condition (a conditional start of the process is none).
    has_conditions: bool = False
    #: The process's signal start events: signal name -> start event id.
    signal_starts: dict[str, str] = field(default_factory=dict)
    #: Per inclusive join: the nodes from which a token can still reach it (filled on first
    #: use; a graph is immutable, so the answer never changes).
    _reach_cache: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def has_mappings(self) -> bool:
        """Whether any node declares input or output mappings or is multi-instance (its
        counters and loop variables are local): only then can an instance have local
        variables."""
        return any(n.inputs or n.outputs or n.multi_instance for n in self.nodes.values())

    def node(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def outgoing(self, node_id: str) -> list[Flow]:
        return [self.flows[f] for f in self.nodes[node_id].outgoing]

    def start_of(self, scope: str | None) -> Node:
        return self.nodes[self.starts[scope]]

    def saga_scope(self, scope: str | None) -> tuple[str, str | None]:
        """The saga policy a failure in ``scope`` falls under: the nearest enclosing scope
        that declares one, as (``"local"`` or ``"global"`` or ``"none"``, that scope)."""
        while scope is not None:
            node = self.nodes[scope]
            if node.saga != "none":
                return node.saga, scope
            scope = node.scope
        return self.saga, None

    def message_boundary(self, activity: str, message: str) -> Node | None:
        """The boundary event on ``activity`` that waits for ``message``, if any."""
        for b in self.boundaries.get(activity, ()):
            if self.nodes[b].message == message:
                return self.nodes[b]
        return None

    def timer_boundaries(self, activity: str) -> list[Node]:
        """The timer boundary events on ``activity`` (armed when a token enters it)."""
        return [
            self.nodes[b]
            for b in self.boundaries.get(activity, ())
            if self.nodes[b].timer is not None
        ]

    @cached_property
    def may_escalate_up(self) -> bool:
        """Whether an instance of this process can send an escalation to its caller: it
        escalates itself, or it calls processes that may send theirs on through it."""
        return any(n.escalation is not None or n.call is not None for n in self.nodes.values())

    @cached_property
    def spawns_tokens(self) -> bool:
        """Whether a non-interrupting boundary can add a token beside a running activity; then
        a scope token that reaches its end waits for such tokens before it completes."""
        return bool(self.event_subprocesses) or any(
            (n.type is NodeType.BOUNDARY and not n.interrupting)
            or not n.wait_for_completion
            or (n.type is NodeType.USER_TASK and any(n.listeners_of(e) for e in BESIDE_EVENTS))
            for n in self.nodes.values()
        )

    @cached_property
    def event_subprocesses(self) -> dict[str | None, tuple[str, ...]]:
        """The event subprocesses of each scope (None: the process), in document order: what
        can start inside that scope while it runs (``semantics/event_subprocesses``)."""
        out: dict[str | None, list[str]] = {}
        for node in self.nodes.values():
            if node.triggered_by_event:
                out.setdefault(node.scope, []).append(node.id)
        return {scope: tuple(ids) for scope, ids in out.items()}

    def trigger_of(self, event_subprocess: str) -> Node:
        """The start event whose trigger starts ``event_subprocess``."""
        return self.start_of(event_subprocess)

    def can_reach(self, join: str, node_id: str) -> bool:
        """Whether a token at ``node_id`` may still get to ``join`` by the flows of their
        scope (an activity also by the paths its boundary events start)."""
        return node_id in self._reaching(join)

    @cached_property
    def turning_flows(self) -> frozenset[str]:
        """The flows along which a token stops being able to reach an inclusive join it
        could reach before: the join's scope decides again when a token takes one, since
        the join may have been waiting only for that token."""
        joins = [n.id for n in self.nodes.values() if n.type is NodeType.INCLUSIVE and n.is_join]
        return frozenset(
            flow.id
            for flow in self.flows.values()
            for join in joins
            if self.can_reach(join, flow.source)
            and flow.target != join
            and not self.can_reach(join, flow.target)
        )

    def _reaching(self, join: str) -> frozenset[str]:
        found = self._reach_cache.get(join)
        if found is None:
            seen = {join}
            todo = [join]
            while todo:
                node = self.nodes[todo.pop()]
                before = [self.flows[f].source for f in node.incoming]
                if node.attached_to is not None:
                    before.append(node.attached_to)
                for source in before:
                    if source not in seen:
                        seen.add(source)
                        todo.append(source)
            found = self._reach_cache[join] = frozenset(seen - {join})
        return found

    def catcher(
        self, activity: str, code: str, catches: Callable[[Node], str | None] = _error_code
    ) -> Node | None:
        """The boundary on ``activity`` that catches ``code`` (an error's, or what
        ``catches`` reads: an escalation's): by code, else catch-all."""
        return by_code([self.nodes[b] for b in self.boundaries.get(activity, ())], code, catches)
