"""Turn a definition document into a validated ``ProcessGraph``.

Validation happens before anything is stored, so a bad document never changes the database, and
every error names the element (node or flow id) so the author can find it.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bpm.definitions.assignments import parse_date, parse_people, parse_priority, parse_text
from bpm.definitions.boundaries import boundary_fields, check_attachments
from bpm.definitions.calls import CALL_KEYS, parse_call
from bpm.definitions.durations import parse_duration
from bpm.definitions.forms import parse_form
from bpm.definitions.mappings import VARIABLE_NAME, VariableMapping, parse_mappings
from bpm.definitions.model import (
    GATEWAYS,
    Compensation,
    DecisionBinding,
    DecisionRef,
    Flow,
    Listener,
    ListenerEvent,
    Node,
    NodeType,
    ProcessGraph,
    RetryPolicy,
)
from bpm.definitions.timers import TIMER_KINDS, TimerSpec, parse_timer
from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import compile_expression

KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
ID_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")
MAX_NODES = 2000

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
    NodeType.START: {"initiator", "form"},
    NodeType.END: {
        "terminate",
        "error",
        "errorMessage",
        "compensate",
        "activity",
        "waitForCompletion",
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
    },
    NodeType.TASK: set(),
    NodeType.MANUAL_TASK: set(),
    NodeType.EXCLUSIVE: set(),
    NodeType.PARALLEL: set(),
    NodeType.SUBPROCESS: {"nodes", "flows", "saga", "compensation"},
    NodeType.BOUNDARY: {
        "attachedTo",
        "timer",
        "error",
        "interrupting",
        "errorCodeVariable",
        "errorMessageVariable",
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
    NodeType.TIMER: {"duration", "date"},
    NodeType.MESSAGE: {"message"},
    NodeType.COMPENSATION_THROW: {"activity", "waitForCompletion"},
    NodeType.CALL_ACTIVITY: CALL_KEYS,
}
#: Nodes that may declare ``inputs`` and ``outputs`` (local variables in, results out).
MAPPED = (
    NodeType.SERVICE_TASK,
    NodeType.USER_TASK,
    NodeType.RECEIVE_TASK,
    NodeType.SUBPROCESS,
    NodeType.CALL_ACTIVITY,
    NodeType.TASK,
    NodeType.MANUAL_TASK,
)
for _mapped in MAPPED:
    NODE_KEYS[_mapped] = NODE_KEYS[_mapped] | {"inputs", "outputs"}
#: Nodes whose outgoing flows may carry conditions, with a default flow taken when none holds.
DEFAULTED = (*MAPPED, NodeType.EXCLUSIVE, NodeType.BOUNDARY)
for _defaulted in DEFAULTED:
    NODE_KEYS[_defaulted] = NODE_KEYS[_defaulted] | {"default"}
NOT_YET: dict[NodeType, str] = {}
COMPENSATION_KEYS = {"handler", "topic", "node", "retry"}
RETRY_KEYS = {"max_attempts", "backoff", "factor", "max_backoff", "delays"}
MAX_DELAYS = 1000
SAGA_SCOPES = {"none", "local", "global"}
#: The longest ``historyTimeToLive`` the definitions table holds (seconds in a 32-bit integer).
MAX_HISTORY_TTL = timedelta(seconds=2**31 - 1)
DIGITS = re.compile(r"^[0-9]+$")
#: The largest whole number a priority or version column holds (a 32-bit integer).
MAX_INT = 2**31 - 1


def load_document(path: str | Path) -> dict[str, Any]:
    """Read a JSON definition file, with an error that names the file and the line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidDefinition(f"{p}: cannot read the file ({exc.strerror})") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidDefinition(
            f"{p}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    if not isinstance(doc, dict):
        raise InvalidDefinition(f"{p}: a definition is a JSON object, got {type(doc).__name__}")
    return doc


def compile_definition(doc: Mapping[str, Any]) -> ProcessGraph:
    """Validate a definition document and compile it; raises ``InvalidDefinition``."""
    if not isinstance(doc, Mapping):
        raise InvalidDefinition("a definition is a JSON object")
    _check_keys(doc, PROCESS_KEYS, "process", None)
    key = doc.get("key")
    if not isinstance(key, str) or not KEY_PATTERN.match(key):
        raise InvalidDefinition(
            f"process: 'key' must be a string matching {KEY_PATTERN.pattern}, got {key!r}"
        )
    name = doc.get("name", key)
    if not isinstance(name, str):
        raise InvalidDefinition(f"process {key!r}: 'name' must be a string")
    saga = _saga(doc, f"process {key!r}", None)
    history_ttl = _history_ttl(doc, f"process {key!r}")
    check_metadata(doc, f"process {key!r}", None)
    builder = _GraphBuilder()
    builder.add_scope(doc, None)
    builder.check()
    own = parse_listeners(doc.get("listeners"), None, f"process {key!r}", None)
    if own:  # the process starts as its start event does: its listeners run first
        first = builder.nodes[builder.starts[None]]
        builder.nodes[first.id] = replace(first, listeners=own + first.listeners)
    return ProcessGraph(
        key=key,
        name=name,
        saga=saga,
        nodes=builder.nodes,
        flows=builder.flows,
        starts=builder.starts,
        document=json.loads(json.dumps(doc)),
        boundaries=builder.boundaries,
        history_ttl=history_ttl,
    )


def _saga(raw: Mapping[str, Any], where: str, element: str | None) -> str:
    saga = raw.get("saga", "none")
    if saga not in SAGA_SCOPES:
        raise InvalidDefinition(
            f"{where}: 'saga' must be none, local or global, got {saga!r}", element
        )
    return str(saga)


def _history_ttl(raw: Mapping[str, Any], where: str) -> timedelta | None:
    """Camunda's ``historyTimeToLive``: whole days (an integer, or digits in a string as in
    BPMN XML) or a fixed-length ISO 8601 duration such as ``P30D``; absent: no TTL of its own."""
    if "historyTimeToLive" not in raw:
        return None
    value = raw["historyTimeToLive"]
    what = f"{where}: 'historyTimeToLive'"
    if isinstance(value, str) and DIGITS.match(value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InvalidDefinition(f"{what} must not be negative, got {value!r}")
        ttl = timedelta(days=min(value, MAX_HISTORY_TTL.days + 1))
    elif isinstance(value, str):
        ttl = parse_duration(value, where=what, element=None)
    else:
        raise InvalidDefinition(
            f"{what} must be a whole number of days (such as 30) or an ISO 8601 duration (such "
            f"as P30D), got {value!r}"
        )
    if ttl > MAX_HISTORY_TTL:
        raise InvalidDefinition(
            f"{what} must be at most {MAX_HISTORY_TTL.days} days (about "
            f"68 years), got {raw['historyTimeToLive']!r}"
        )
    return ttl


def _check_keys(raw: Mapping[str, Any], allowed: set[str], where: str, element: str | None) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidDefinition(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})", element
        )


def _where(node_id: str, kind: str) -> str:
    return f"node {node_id!r} ({kind})"


class _GraphBuilder:
    """Collects nodes and flows of every scope, then checks the graph as a whole."""

    def __init__(self) -> None:
        self.raw_nodes: dict[str, tuple[Mapping[str, Any], str | None]] = {}
        self.flows: dict[str, Flow] = {}
        self.flow_scope: dict[str, str | None] = {}
        self.nodes: dict[str, Node] = {}
        self.starts: dict[str | None, str] = {}
        self.boundaries: dict[str, tuple[str, ...]] = {}

    def add_scope(self, raw: Mapping[str, Any], scope: str | None) -> None:
        where = "process" if scope is None else _where(scope, "subProcess")
        nodes = raw.get("nodes")
        flows = raw.get("flows", [])
        if not isinstance(nodes, list) or not nodes:
            raise InvalidDefinition(f"{where}: 'nodes' must be a non-empty list", scope)
        if not isinstance(flows, list):
            raise InvalidDefinition(f"{where}: 'flows' must be a list", scope)
        for item in nodes:
            self._add_raw_node(item, scope, where)
        for item in flows:
            self._add_flow(item, scope, where)

    def _add_raw_node(self, item: Any, scope: str | None, where: str) -> None:
        if not isinstance(item, Mapping):
            raise InvalidDefinition(f"{where}: every node is a JSON object, got {item!r}", scope)
        node_id = item.get("id")
        if not isinstance(node_id, str) or not ID_PATTERN.match(node_id):
            raise InvalidDefinition(
                f"{where}: node id must be a string matching {ID_PATTERN.pattern}, got {node_id!r}",
                scope,
            )
        if node_id in self.raw_nodes or node_id in self.flows:
            raise InvalidDefinition(f"node {node_id!r}: duplicate id", node_id)
        if len(self.raw_nodes) >= MAX_NODES:
            raise InvalidDefinition(f"{where}: more than {MAX_NODES} nodes", scope)
        kind = str(item.get("type"))
        try:
            node_type = NodeType(kind)
        except ValueError:
            allowed = ", ".join(t.value for t in NodeType)
            raise InvalidDefinition(
                f"node {node_id!r}: unknown node type {kind!r} (known: {allowed})", node_id
            ) from None
        if node_type in NOT_YET:
            raise InvalidDefinition(
                f"{_where(node_id, node_type.value)}: {NOT_YET[node_type]} are not supported yet",
                node_id,
            )
        _check_keys(item, COMMON_NODE_KEYS | NODE_KEYS[node_type], _where(node_id, kind), node_id)
        check_metadata(item, _where(node_id, kind), node_id)
        self.raw_nodes[node_id] = (item, scope)
        if node_type is NodeType.SUBPROCESS:
            _saga(item, _where(node_id, kind), node_id)
            self.add_scope(item, node_id)

    def _add_flow(self, item: Any, scope: str | None, where: str) -> None:
        if not isinstance(item, Mapping):
            raise InvalidDefinition(f"{where}: every flow is a JSON object, got {item!r}", scope)
        flow_id = item.get("id")
        if not isinstance(flow_id, str) or not ID_PATTERN.match(flow_id):
            raise InvalidDefinition(
                f"{where}: flow id must be a string matching {ID_PATTERN.pattern}, got {flow_id!r}",
                scope,
            )
        if flow_id in self.flows or flow_id in self.raw_nodes:
            raise InvalidDefinition(f"flow {flow_id!r}: duplicate id", flow_id)
        _check_keys(item, FLOW_KEYS, f"flow {flow_id!r}", flow_id)
        check_metadata(item, f"flow {flow_id!r}", flow_id)
        ends = {}
        for end in ("source", "target"):
            ref = item.get(end)
            if not isinstance(ref, str):
                raise InvalidDefinition(f"flow {flow_id!r}: '{end}' must be a node id", flow_id)
            if ref not in self.raw_nodes or self.raw_nodes[ref][1] != scope:
                inside = "the process" if scope is None else f"subProcess {scope!r}"
                raise InvalidDefinition(
                    f"flow {flow_id!r}: {end} {ref!r} is not a node of {inside} (dangling flow)",
                    flow_id,
                )
            ends[end] = ref
        condition = item.get("condition")
        expr = None
        if condition is not None:
            if not isinstance(condition, str):
                raise InvalidDefinition(f"flow {flow_id!r}: 'condition' must be a string", flow_id)
            try:
                expr = compile_expression(condition, where=f"flow {flow_id!r}")
            except InvalidExpression as exc:
                raise InvalidDefinition(str(exc), flow_id) from exc
        taken = parse_listeners(
            item.get("listeners"), None, f"flow {flow_id!r}", flow_id, on_flow=True
        )
        self.flows[flow_id] = Flow(flow_id, ends["source"], ends["target"], expr, taken)
        self.flow_scope[flow_id] = scope

    def check(self) -> None:
        incoming: dict[str, list[str]] = {n: [] for n in self.raw_nodes}
        outgoing: dict[str, list[str]] = {n: [] for n in self.raw_nodes}
        for flow in self.flows.values():
            outgoing[flow.source].append(flow.id)
            incoming[flow.target].append(flow.id)
        for node_id, (raw, scope) in self.raw_nodes.items():
            node = _compile_node(
                node_id, raw, scope, tuple(incoming[node_id]), tuple(outgoing[node_id]), self.flows
            )
            self.nodes[node_id] = node
            if node.type is NodeType.START:
                if scope in self.starts:
                    raise InvalidDefinition(
                        f"node {node_id!r}: a second startEvent in "
                        f"{'the process' if scope is None else repr(scope)} "
                        f"(the first is {self.starts[scope]!r})",
                        node_id,
                    )
                self.starts[scope] = node_id
        scopes = {None} | {
            n for n, (raw, _) in self.raw_nodes.items() if raw.get("type") == NodeType.SUBPROCESS
        }
        for scope in scopes:
            if scope not in self.starts:
                inside = "the process" if scope is None else f"subProcess {scope!r}"
                raise InvalidDefinition(f"{inside} has no startEvent", scope)
        self.boundaries = check_attachments(self.nodes)
        self._add_timeout_boundaries()
        self._check_compensation()
        self._check_reachable()

    def _add_timeout_boundaries(self) -> None:
        """A user task's ``timeout`` listener is a non-interrupting timer boundary event of
        its own: its timer starts with the task, and when it fires, a token beside the
        task's runs the listener and ends while the task stays open. The event's id is
        ``<task id>:timeout:<n>``, which no id in a definition can be (ids hold no ``:``)."""
        for node in list(self.nodes.values()):
            found = node.listeners_of(ListenerEvent.TIMEOUT)
            if not found:
                continue
            kept = tuple(x for x in node.listeners if x.event is not ListenerEvent.TIMEOUT)
            self.nodes[node.id] = replace(node, listeners=kept)
            added = []
            for n, listener in enumerate(found):
                boundary = Node(
                    id=f"{node.id}:timeout:{n}",
                    type=NodeType.BOUNDARY,
                    scope=node.scope,
                    attached_to=node.id,
                    timer=listener.timer,
                    interrupting=False,
                    retry=node.retry,
                    timeout=node.timeout,
                    priority=node.priority,
                    listeners=(replace(listener, timer=None),),
                )
                self.nodes[boundary.id] = boundary
                added.append(boundary.id)
            self.boundaries[node.id] = (*self.boundaries.get(node.id, ()), *added)

    def _check_compensation(self) -> None:
        """Handler activities exist apart from the flow; named activities can be undone."""
        for node in list(self.nodes.values()):
            where = _where(node.id, node.type.value)
            spec = node.compensation
            if spec is not None and spec.node is not None:
                handler = self.nodes.get(spec.node)
                if (
                    handler is None
                    or handler.scope != node.scope
                    or handler.type not in (NodeType.SERVICE_TASK, NodeType.USER_TASK)
                ):
                    raise InvalidDefinition(
                        f"{where}: compensation node {spec.node!r} must be a serviceTask or "
                        f"userTask of the same scope",
                        node.id,
                    )
                if handler.listeners:
                    raise InvalidDefinition(
                        f"node {handler.id!r}: a compensation handler activity cannot have "
                        f"listeners (they are not run when it compensates); put the work in "
                        f"the handler itself",
                        handler.id,
                    )
                if handler.incoming or handler.outgoing or handler.compensation:
                    raise InvalidDefinition(
                        f"node {handler.id!r}: a compensation handler activity stands apart "
                        f"from the flow (no flows, no compensation of its own)",
                        handler.id,
                    )
                self.nodes[handler.id] = replace(handler, for_compensation=True)
            if node.activity is not None:
                target = self.nodes.get(node.activity)
                if (
                    target is None
                    or target.scope != node.scope
                    or (target.compensation is None and not self._compensates_inside(target))
                ):
                    raise InvalidDefinition(
                        f"{where}: 'activity' {node.activity!r} must be an activity of the same "
                        f"scope that declares a compensation, or a subProcess with such an "
                        f"activity inside",
                        node.id,
                    )

    def _compensates_inside(self, target: Node) -> bool:
        """A subprocess without a handler of its own is compensated by undoing what ran inside
        it (BPMN 2.0 13.5.5): some activity within it, at any depth, must declare how."""
        if target.type is not NodeType.SUBPROCESS:
            return False
        for node in self.nodes.values():
            scope = node.scope
            while scope is not None and node.compensation is not None:
                if scope == target.id:
                    return True
                scope = self.nodes[scope].scope
        return False

    def _check_reachable(self) -> None:
        seen: set[str] = set()
        todo = deque(self.starts.values())
        while todo:
            node_id = todo.popleft()
            if node_id in seen:
                continue
            seen.add(node_id)
            todo.extend(self.flows[f].target for f in self.nodes[node_id].outgoing)
            todo.extend(self.boundaries.get(node_id, ()))
        for node_id in self.raw_nodes:
            if node_id not in seen and not self.nodes[node_id].for_compensation:
                raise InvalidDefinition(
                    f"node {node_id!r}: unreachable from the start event of its scope", node_id
                )


def _compile_node(
    node_id: str,
    raw: Mapping[str, Any],
    scope: str | None,
    incoming: tuple[str, ...],
    outgoing: tuple[str, ...],
    flows: Mapping[str, Flow],
) -> Node:
    node_type = NodeType(str(raw["type"]))
    where = _where(node_id, node_type.value)
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidDefinition(f"{where}: 'name' must be a string", node_id)
    _check_shape(node_type, where, node_id, incoming, outgoing)
    _check_conditions(node_type, where, node_id, outgoing, flows)
    fields: dict[str, Any] = {}
    if node_type is NodeType.SERVICE_TASK:
        fields = _service_task_fields(raw, where, node_id)
    elif node_type is NodeType.END:
        fields = _end_fields(raw, where, node_id)
    elif node_type is NodeType.BOUNDARY:
        fields = boundary_fields(raw, where, node_id, incoming)
    elif node_type is NodeType.TIMER:
        fields = {"timer": parse_timer(raw, where, node_id)}
    elif node_type in (NodeType.RECEIVE_TASK, NodeType.MESSAGE):
        fields = {"message": _name(raw, "message", where, node_id)}
    elif node_type is NodeType.USER_TASK:
        fields = _user_task_fields(raw, where, node_id)
    elif node_type is NodeType.SUBPROCESS:
        fields = {
            "saga": _saga(raw, where, node_id),
            "compensation": _compensation(raw, where, node_id),
        }
    elif node_type is NodeType.CALL_ACTIVITY:
        fields = {"call": parse_call(raw, where, node_id)}
    elif node_type is NodeType.COMPENSATION_THROW:
        fields = {
            "activity": _activity(raw, where, node_id),
            "wait_for_completion": _wait_for_completion(raw, where, node_id),
        }
    if node_type in DEFAULTED:
        fields.update(_default_flow(raw, where, node_id, outgoing, flows))
    fields["properties"] = dict(raw.get("properties", {}))
    fields["listeners"] = parse_listeners(raw.get("listeners"), node_type, where, node_id)
    if node_type is NodeType.START:
        fields["initiator"] = _initiator(raw, where, node_id)
        fields["form"] = parse_form(raw.get("form"), where, node_id)
    if node_type in MAPPED:
        fields["inputs"] = parse_mappings(raw.get("inputs"), "inputs", where, node_id)
        fields["outputs"] = parse_mappings(raw.get("outputs"), "outputs", where, node_id)
    return Node(node_id, node_type, scope, incoming, outgoing, name=name, **fields)


CONNECTOR_KEYS = {"id", "inputs", "outputs"}


def _connector(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    """``connector``: ``{"id": handler, "inputs": {...}, "outputs": {...}}``; the inputs are
    the handler's fields, the outputs are evaluated over its result."""
    spec = raw["connector"]
    if not isinstance(spec, Mapping):
        raise InvalidDefinition(f"{where}: 'connector' must be an object", node_id)
    _check_keys(spec, CONNECTOR_KEYS, f"{where} 'connector'", node_id)
    ident = spec.get("id")
    if not isinstance(ident, str) or not NAME_PATTERN.match(ident):
        raise InvalidDefinition(
            f"{where}: connector 'id' must be a name matching {NAME_PATTERN.pattern}", node_id
        )
    if "fields" in raw:
        raise InvalidDefinition(
            f"{where}: a connector's handler gets the connector's inputs as its fields; "
            f"give 'inputs' in the connector instead of 'fields'",
            node_id,
        )
    return {
        "handler": ident,
        "fields": parse_mappings(spec.get("inputs"), "inputs", f"{where} connector", node_id),
        "connector_outputs": parse_mappings(
            spec.get("outputs"), "outputs", f"{where} connector", node_id
        ),
    }


DECISION_KEYS = {"key", "binding", "version", "versionTag", "mapResult"}
MAP_RESULTS = ("resultList", "singleEntry", "singleResult", "collectEntries")


def parse_decision_ref(raw: Any, where: str, node_id: str) -> DecisionRef:
    """``decision``: ``{"key": ..., "binding": "latest"|"version"|"versionTag", ...}``."""
    if isinstance(raw, str):
        raw = {"key": raw}
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{where}: 'decision' must be a decision key or an object", node_id)
    _check_keys(raw, DECISION_KEYS, f"{where} 'decision'", node_id)
    key = raw.get("key")
    if not isinstance(key, str) or not KEY_PATTERN.match(key):
        raise InvalidDefinition(
            f"{where}: decision 'key' must match {KEY_PATTERN.pattern}, got {key!r}", node_id
        )
    try:
        binding = DecisionBinding(raw.get("binding", "latest"))
    except ValueError:
        raise InvalidDefinition(
            f"{where}: decision 'binding' must be latest, version, versionTag or deployment, got "
            f"{raw.get('binding')!r}",
            node_id,
        ) from None
    version, tag = raw.get("version"), raw.get("versionTag")
    if binding is DecisionBinding.VERSION and (
        not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= MAX_INT
    ):
        raise InvalidDefinition(
            f"{where}: decision binding 'version' needs a 'version' >= 1", node_id
        )
    if binding is DecisionBinding.VERSION_TAG and (not isinstance(tag, str) or not tag):
        raise InvalidDefinition(
            f"{where}: decision binding 'versionTag' needs a 'versionTag'", node_id
        )
    mode = raw.get("mapResult", "resultList")
    if mode not in MAP_RESULTS:
        raise InvalidDefinition(
            f"{where}: decision 'mapResult' must be one of {', '.join(MAP_RESULTS)}, got {mode!r}",
            node_id,
        )
    return DecisionRef(
        key,
        binding,
        version if binding is DecisionBinding.VERSION else None,
        tag if binding is DecisionBinding.VERSION_TAG else None,
        mode,
    )


#: The events a listener may name, by node type (user tasks add their task events); a
#: parallel gateway has none (it is left by forks and joins, not by one token).
_NODE_EVENTS = (ListenerEvent.START, ListenerEvent.END)
_USER_TASK_EVENTS = (
    ListenerEvent.ASSIGNMENT,
    ListenerEvent.CREATE,
    ListenerEvent.COMPLETE,
    ListenerEvent.DELETE,
    ListenerEvent.UPDATE,
    ListenerEvent.TIMEOUT,
)
LISTENER_KEYS = {"event", "handler", "fields", "timer"}


def parse_listeners(
    raw: Any,
    node_type: NodeType | None,
    where: str,
    node_id: str | None,
    *,
    on_flow: bool = False,
) -> tuple[Listener, ...]:
    """``listeners``: a list of ``{"event", "handler", "fields"}``, run in list order for
    each event. ``node_type`` None: the process's own (``start`` only), or with ``on_flow``
    a flow's (``take`` only)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidDefinition(f"{where}: 'listeners' must be a list", node_id)
    if on_flow:
        allowed: tuple[ListenerEvent, ...] = (ListenerEvent.TAKE,)
    elif node_type is None:
        allowed = (ListenerEvent.START,)
    elif node_type is NodeType.PARALLEL:
        allowed = ()
    elif node_type in GATEWAYS:
        allowed = (ListenerEvent.START,)
    elif node_type is NodeType.END:
        allowed = (ListenerEvent.START, ListenerEvent.END)
    else:
        allowed = _NODE_EVENTS + (_USER_TASK_EVENTS if node_type is NodeType.USER_TASK else ())
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise InvalidDefinition(f"{where}: every listener is an object", node_id)
        _check_keys(item, LISTENER_KEYS, f"{where} listener", node_id)
        event = item.get("event")
        if event not in {e.value for e in allowed}:
            names = ", ".join(e.value for e in allowed) or "none"
            raise InvalidDefinition(
                f"{where}: listener event {event!r} is not one this node has (it has: {names})",
                node_id,
            )
        handler = item.get("handler")
        if not isinstance(handler, str) or not NAME_PATTERN.match(handler):
            raise InvalidDefinition(
                f"{where}: listener 'handler' must be a name matching {NAME_PATTERN.pattern}",
                node_id,
            )
        fields = parse_mappings(item.get("fields"), "fields", f"{where} listener", node_id or "")
        out.append(Listener(ListenerEvent(event), handler, fields, _listener_timer(item, where)))
    return tuple(out)


def _listener_timer(item: Mapping[str, Any], where: str) -> TimerSpec | None:
    """A ``timeout`` listener's ``timer`` (``duration`` or ``date``), which no other has."""
    raw = item.get("timer")
    if (raw is None) != (item.get("event") != ListenerEvent.TIMEOUT):
        raise InvalidDefinition(
            f"{where}: a listener has a 'timer' exactly when its event is 'timeout'"
        )
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{where}: a timeout listener's 'timer' must be an object")
    _check_keys(raw, set(TIMER_KINDS), f"{where} timeout listener timer", None)
    return parse_timer(raw, f"{where} timeout listener", "")


def _initiator(raw: Mapping[str, Any], where: str, node_id: str) -> str | None:
    initiator = raw.get("initiator")
    if initiator is not None and (
        not isinstance(initiator, str) or not VARIABLE_NAME.match(initiator)
    ):
        raise InvalidDefinition(f"{where}: 'initiator' must be a variable name", node_id)
    return initiator


def check_metadata(raw: Mapping[str, Any], where: str, element: str | None) -> None:
    """Keys without behaviour still have a shape, so tools can read them."""
    props = raw.get("properties", {})
    if not isinstance(props, Mapping) or not all(
        isinstance(k, str)
        and (isinstance(v, str) or (isinstance(v, list) and all(isinstance(t, str) for t in v)))
        for k, v in props.items()
    ):
        raise InvalidDefinition(
            f"{where}: 'properties' must be an object of name -> text (or a list of texts, "
            f"for a name given several times)",
            element,
        )
    for key in ("documentation", "versionTag"):
        if key in raw and not isinstance(raw[key], str):
            raise InvalidDefinition(f"{where}: {key!r} must be a string", element)
    if "startableInTasklist" in raw and not isinstance(raw["startableInTasklist"], bool):
        raise InvalidDefinition(f"{where}: 'startableInTasklist' must be true or false", element)
    for key in ("candidate_starter_groups", "candidate_starter_users"):
        names = raw.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise InvalidDefinition(f"{where}: {key!r} must be a list of names", element)
    objects = raw.get("dataObjects", [])
    if not isinstance(objects, list) or not all(
        isinstance(o, Mapping) and all(isinstance(v, str) for v in o.values()) for o in objects
    ):
        raise InvalidDefinition(
            f"{where}: 'dataObjects' must be a list of objects of text values", element
        )


def _check_shape(
    node_type: NodeType,
    where: str,
    node_id: str,
    incoming: tuple[str, ...],
    outgoing: tuple[str, ...],
) -> None:
    """Flow counts BPMN gives a meaning. An activity or event with several outgoing flows
    forks (each flow whose condition holds is taken), as a parallel gateway would."""
    if node_type is NodeType.START and incoming:
        raise InvalidDefinition(f"{where}: a start event cannot have incoming flows", node_id)
    if node_type is NodeType.END and outgoing:
        raise InvalidDefinition(f"{where}: an end event cannot have outgoing flows", node_id)
    if node_type in GATEWAYS and not outgoing:
        raise InvalidDefinition(f"{where}: a gateway needs at least one outgoing flow", node_id)


def _check_conditions(
    node_type: NodeType,
    where: str,
    node_id: str,
    outgoing: tuple[str, ...],
    flows: Mapping[str, Flow],
) -> None:
    """A parallel gateway takes every flow, so a condition there would mean nothing."""
    if node_type is not NodeType.PARALLEL:
        return
    for flow_id in outgoing:
        if flows[flow_id].condition is not None:
            raise InvalidDefinition(
                f"flow {flow_id!r}: a flow leaving a parallelGateway cannot have a condition "
                f"(every flow is taken); use an exclusive gateway, or conditions on flows "
                f"leaving an activity",
                flow_id,
            )


def _wait_for_completion(raw: Mapping[str, Any], where: str, node_id: str) -> bool:
    wait = raw.get("waitForCompletion", True)
    if not isinstance(wait, bool):
        raise InvalidDefinition(f"{where}: 'waitForCompletion' must be true or false", node_id)
    return wait


def _activity(raw: Mapping[str, Any], where: str, node_id: str) -> str | None:
    activity = raw.get("activity")
    if activity is not None and not isinstance(activity, str):
        raise InvalidDefinition(f"{where}: 'activity' must be a node id", node_id)
    return activity


def _compensation(raw: Mapping[str, Any], where: str, node_id: str) -> Compensation | None:
    spec = raw.get("compensation")
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise InvalidDefinition(f"{where}: 'compensation' must be an object", node_id)
    _check_keys(spec, COMPENSATION_KEYS, f"{where} 'compensation'", node_id)
    kinds = [k for k in ("handler", "topic", "node") if k in spec]
    if len(kinds) != 1:
        raise InvalidDefinition(
            f"{where}: 'compensation' needs exactly one of 'handler', 'topic' or 'node'", node_id
        )
    value = spec[kinds[0]]
    pattern = ID_PATTERN if kinds[0] == "node" else NAME_PATTERN
    if not isinstance(value, str) or not pattern.match(value):
        raise InvalidDefinition(
            f"{where}: compensation '{kinds[0]}' must be a name matching {pattern.pattern}", node_id
        )
    retry = _retry(spec.get("retry"), f"{where} compensation", node_id)
    return Compensation(**{kinds[0]: value}, retry=retry)


def _service_task_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "retry": _retry(raw.get("retry"), where, node_id),
        "compensation": _compensation(raw, where, node_id),
    }
    if sum(k in raw for k in ("handler", "topic", "decision", "connector")) != 1:
        raise InvalidDefinition(
            f"{where}: needs exactly one of 'handler' (an in-process handler name), 'topic' "
            f"(an external worker topic), 'decision' (a DMN decision to evaluate) or "
            f"'connector' (a handler given its inputs, whose outputs map its result)",
            node_id,
        )
    if "connector" in raw:
        fields.update(_connector(raw, where, node_id))
    if "decision" in raw:
        fields["decision"] = parse_decision_ref(raw["decision"], where, node_id)
    if "handler" in raw:
        value = raw["handler"]
        if not isinstance(value, str) or not NAME_PATTERN.match(value):
            raise InvalidDefinition(
                f"{where}: 'handler' must be a name matching {NAME_PATTERN.pattern}", node_id
            )
        fields["handler"] = value
    if "topic" in raw:
        fields["topic"] = _topic(raw["topic"], where, node_id)
        fields["topic_expression"] = _topic_expression(fields["topic"], where, node_id)
    if "timeout" in raw:
        timeout = parse_duration(raw["timeout"], where=f"{where} 'timeout'", element=node_id)
        if timeout <= timedelta(0):
            raise InvalidDefinition(f"{where}: 'timeout' must be positive", node_id)
        fields["timeout"] = timeout
    if "connector" not in raw:
        fields["fields"] = parse_mappings(raw.get("fields"), "fields", where, node_id)
    result = raw.get("resultVariable")
    if result is not None:
        if not isinstance(result, str) or not VARIABLE_NAME.match(result):
            raise InvalidDefinition(f"{where}: 'resultVariable' must be a variable name", node_id)
        if "topic" in raw:
            raise InvalidDefinition(
                f"{where}: 'resultVariable' needs a 'handler' or a 'decision' (an external "
                f"worker completes with the variables it sets)",
                node_id,
            )
        fields["result_variable"] = result
    if "priority" in raw:
        priority = raw["priority"]
        if not isinstance(priority, int) or isinstance(priority, bool) or abs(priority) > MAX_INT:
            raise InvalidDefinition(
                f"{where}: 'priority' must be an integer between -{MAX_INT} and {MAX_INT}",
                node_id,
            )
        fields["priority"] = priority
    return fields


#: A topic is any text a worker subscribes by (Camunda's are free text: "Use API Key"), up
#: to 255 characters, without control characters or an expression (topics are fixed).
TOPIC_PATTERN = re.compile(r"^[^\x00-\x1f\x7f\s](?:[^\x00-\x1f\x7f]{0,253}[^\x00-\x1f\x7f\s])?$")


def _topic(value: Any, where: str, node_id: str) -> str:
    if isinstance(value, str) and ("${" in value or "#{" in value):
        return value  # an expression: checked by _topic_expression, evaluated per task
    if not isinstance(value, str) or not TOPIC_PATTERN.match(value):
        raise InvalidDefinition(
            f"{where}: 'topic' must be text of 1 to 255 characters, without control "
            f"characters or space at either end, got {value!r}",
            node_id,
        )
    return value


def _topic_expression(topic: str, where: str, node_id: str) -> VariableMapping | None:
    """A topic with ``${...}`` (Camunda allows expressions there): evaluated over the
    variables when each task is created."""
    if "${" not in topic and "#{" not in topic:
        return None
    text = topic.replace("#{", "${")
    [mapping] = parse_mappings({"topic": text}, "topic", where, node_id)
    return mapping


def _name(raw: Mapping[str, Any], key: str, where: str, node_id: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not NAME_PATTERN.match(value):
        raise InvalidDefinition(
            f"{where}: needs '{key}', a name matching {NAME_PATTERN.pattern}", node_id
        )
    return value


def _user_task_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"compensation": _compensation(raw, where, node_id)}
    if raw.get("assignee") is not None:
        fields["assignee"] = parse_text(raw["assignee"], "assignee", where, node_id)
    for key in ("candidate_groups", "candidate_users"):
        fields[key] = parse_people(raw.get(key), key, where, node_id)
    for key in ("due_date", "follow_up_date"):
        fields[key] = parse_date(raw.get(key), key, where, node_id)
    priority = parse_priority(raw.get("priority"), where, node_id)
    if isinstance(priority, int):
        fields["priority"] = priority
    else:
        fields["priority_expression"] = priority
    fields["form"] = parse_form(raw.get("form"), where, node_id)
    return fields


def _retry(raw: Any, where: str, node_id: str) -> RetryPolicy:
    if raw is None:
        return RetryPolicy()
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{where}: 'retry' must be an object", node_id)
    _check_keys(raw, RETRY_KEYS, f"{where} 'retry'", node_id)
    attempts = raw.get("max_attempts", 1)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= 1000:
        raise InvalidDefinition(
            f"{where}: retry 'max_attempts' must be an integer 1..1000", node_id
        )
    delays = _delays(raw.get("delays"), where, node_id)
    if delays and ("backoff" in raw or "factor" in raw or "max_backoff" in raw):
        raise InvalidDefinition(
            f"{where}: retry 'delays' replaces 'backoff', 'factor' and 'max_backoff'; give one "
            f"or the others",
            node_id,
        )
    factor = raw.get("factor", 2.0)
    if not isinstance(factor, int | float) or isinstance(factor, bool) or not 1 <= factor <= 100:
        raise InvalidDefinition(f"{where}: retry 'factor' must be a number 1..100", node_id)
    default = RetryPolicy()
    backoff = (
        parse_duration(raw["backoff"], where=f"{where} retry 'backoff'", element=node_id)
        if "backoff" in raw
        else default.backoff
    )
    max_backoff = (
        parse_duration(raw["max_backoff"], where=f"{where} retry 'max_backoff'", element=node_id)
        if "max_backoff" in raw
        else max(default.max_backoff, backoff)
    )
    return RetryPolicy(attempts, backoff, float(factor), max_backoff, delays)


def _delays(raw: Any, where: str, node_id: str) -> tuple[timedelta, ...]:
    """The waits before the second, third, ... run; the last is used again when runs remain."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or len(raw) > MAX_DELAYS:
        raise InvalidDefinition(
            f"{where}: retry 'delays' must be a list of 1 to {MAX_DELAYS} durations", node_id
        )
    return tuple(parse_duration(d, where=f"{where} retry 'delays'", element=node_id) for d in raw)


def _end_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    compensate = raw.get("compensate", False)
    if not isinstance(compensate, bool):
        raise InvalidDefinition(f"{where}: 'compensate' must be true or false", node_id)
    if "activity" in raw and not compensate:
        raise InvalidDefinition(f"{where}: 'activity' needs 'compensate': true", node_id)
    if compensate and (raw.get("terminate") or "error" in raw):
        raise InvalidDefinition(
            f"{where}: an end event compensates, terminates or throws an error, only one of them",
            node_id,
        )
    if "waitForCompletion" in raw and not compensate:
        raise InvalidDefinition(f"{where}: 'waitForCompletion' needs 'compensate': true", node_id)
    if compensate:
        return {
            "compensate": True,
            "activity": _activity(raw, where, node_id),
            "wait_for_completion": _wait_for_completion(raw, where, node_id),
        }
    terminate = raw.get("terminate", False)
    if not isinstance(terminate, bool):
        raise InvalidDefinition(f"{where}: 'terminate' must be true or false", node_id)
    error = raw.get("error")
    if error is not None and (not isinstance(error, str) or not error):
        raise InvalidDefinition(f"{where}: 'error' must be a non-empty error code", node_id)
    if terminate and error is not None:
        raise InvalidDefinition(f"{where}: an end event is terminate or error, not both", node_id)
    message = raw.get("errorMessage")
    if message is not None and (not isinstance(message, str) or error is None):
        raise InvalidDefinition(f"{where}: 'errorMessage' is text, with an 'error'", node_id)
    return {"terminate": terminate, "error_code": error, "error_message": message}


def _default_flow(
    raw: Mapping[str, Any],
    where: str,
    node_id: str,
    outgoing: tuple[str, ...],
    flows: Mapping[str, Flow],
) -> dict[str, Any]:
    default = raw.get("default")
    if default is None:
        return {}
    if default not in outgoing:
        raise InvalidDefinition(
            f"{where}: default flow {default!r} is not one of its outgoing flows "
            f"({', '.join(outgoing)})",
            node_id,
        )
    if flows[default].condition is not None:
        raise InvalidDefinition(
            f"flow {default!r}: the default flow cannot have a condition", default
        )
    return {"default_flow": default}
