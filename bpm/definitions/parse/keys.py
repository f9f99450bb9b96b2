"""Which keys each element of a definition may have: the process, a flow, and a node of each
type (``NODE_KEYS``), with the node types that map variables (``MAPPED``) or take a default
flow (``DEFAULTED``).

A table apart from the code that reads the keys, so adding a key to a node type starts here and
an unknown key is refused before any field is read.
"""

from __future__ import annotations

from bpm.definitions.calls import CALL_KEYS
from bpm.definitions.model import MULTI_INSTANCE_NODES, NodeType
from bpm.definitions.parse.event_starts import START_KEYS

#: Process keys without behaviour: kept for people and tools (``bpm definition``, the API).
PROCESS_METADATA = {
    "properties",
    "documentation",
    "versionTag",
    "startableInTasklist",
    "candidate_starter_groups",
    "candidate_starter_users",
    "dataObjects",
}
PROCESS_KEYS = {
    "key",
    "name",
    "saga",
    "nodes",
    "flows",
    "historyTimeToLive",
    "listeners",
    *PROCESS_METADATA,
}
FLOW_KEYS = {
    "id",
    "source",
    "target",
    "condition",
    "name",
    "documentation",
    "properties",
    "listeners",
}
COMMON_NODE_KEYS = {"id", "type", "name", "properties", "documentation", "listeners"}
NODE_KEYS: dict[NodeType, set[str]] = {
    NodeType.START: {"initiator", "form", *START_KEYS},
    NodeType.END: {
        "terminate",
        "error",
        "errorMessage",
        "compensate",
        "activity",
        "waitForCompletion",
        "escalation",
        "signal",
        "in",
    },
    NodeType.SERVICE_TASK: {
        "handler",
        "topic",
        "compensation",
        "retry",
        "timeout",
        "priority",
        "fields",
        "resultVariable",
        "decision",
        "connector",
        "expression",
        "delegateExpression",
        "script",
    },
    NodeType.TASK: {"compensation"},
    NodeType.MANUAL_TASK: {"compensation"},
    NodeType.EXCLUSIVE: set(),
    NodeType.EVENT_GATEWAY: set(),
    NodeType.INCLUSIVE: set(),
    NodeType.PARALLEL: set(),
    NodeType.SUBPROCESS: {"nodes", "flows", "saga", "compensation", "triggeredByEvent"},
    NodeType.BOUNDARY: {
        "attachedTo",
        "timer",
        "message",
        "escalation",
        "escalationCodeVariable",
        "signal",
        "error",
        "interrupting",
        "errorCodeVariable",
        "errorMessageVariable",
        "condition",
    },
    NodeType.USER_TASK: {
        "assignee",
        "candidate_groups",
        "candidate_users",
        "due_date",
        "follow_up_date",
        "priority",
        "form",
        "compensation",
    },
    NodeType.RECEIVE_TASK: {"message"},
    NodeType.TIMER: {"duration", "date", "cycle"},
    NodeType.MESSAGE: {"message"},
    NodeType.CONDITIONAL: {"condition"},
    NodeType.COMPENSATION_THROW: {"activity", "waitForCompletion"},
    NodeType.ESCALATION_THROW: {"escalation"},
    NodeType.SIGNAL: {"signal"},
    NodeType.SIGNAL_THROW: {"signal", "in"},
    NodeType.CALL_ACTIVITY: CALL_KEYS | {"compensation"},
}
#: Activities that may declare ``inputs`` and ``outputs`` (local variables in, results out).
MAPPED_ACTIVITIES = (
    NodeType.SERVICE_TASK,
    NodeType.USER_TASK,
    NodeType.RECEIVE_TASK,
    NodeType.SUBPROCESS,
    NodeType.CALL_ACTIVITY,
    NodeType.TASK,
    NodeType.MANUAL_TASK,
)
#: Every node that may declare them: the activities, and the intermediate and end events
#: (their inputs live while the token is at the event; start and boundary events and
#: gateways take none, as in Camunda 7).
MAPPED = (
    *MAPPED_ACTIVITIES,
    NodeType.END,
    NodeType.TIMER,
    NodeType.MESSAGE,
    NodeType.SIGNAL,
    NodeType.CONDITIONAL,
    NodeType.SIGNAL_THROW,
    NodeType.ESCALATION_THROW,
    NodeType.COMPENSATION_THROW,
)
for _mapped in MAPPED:
    NODE_KEYS[_mapped] = NODE_KEYS[_mapped] | {"inputs", "outputs"}
#: Nodes whose outgoing flows may carry conditions, with a default flow taken when none holds.
DEFAULTED = (*MAPPED_ACTIVITIES, NodeType.EXCLUSIVE, NodeType.INCLUSIVE, NodeType.BOUNDARY)
for _defaulted in DEFAULTED:
    NODE_KEYS[_defaulted] = NODE_KEYS[_defaulted] | {"default"}
#: Activities: any of them may run as a multi-instance activity.
for _activity in MULTI_INSTANCE_NODES:
    NODE_KEYS[_activity] = NODE_KEYS[_activity] | {"multiInstance"}
#: Transactions (``bpm.definitions.transactions``): a subprocess's flag, and the cancel end
#: and cancel boundary events' own.
for _type, _key in (
    (NodeType.SUBPROCESS, "transaction"),
    (NodeType.END, "cancel"),
    (NodeType.BOUNDARY, "cancel"),
):
    NODE_KEYS[_type] = NODE_KEYS[_type] | {_key}
NOT_YET: dict[NodeType, str] = {}
