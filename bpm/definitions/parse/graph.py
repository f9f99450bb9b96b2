"""The graph as a whole: collect the nodes and flows of every scope (process and subprocesses),
compile each node, then check what only the whole graph can show: one start event per scope,
boundary attachments, compensation handlers and targets, and that every node is reachable.

Apart from the fields of each node (``nodes``) because these rules look across nodes; a user
task's ``timeout`` listeners become boundary events here, as they need the task's attachments.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bpm.definitions.boundaries import check_attachments
from bpm.definitions.model import Flow, ListenerEvent, Node, NodeType
from bpm.definitions.parse import event_gateways, event_starts
from bpm.definitions.parse.keys import COMMON_NODE_KEYS, FLOW_KEYS, NODE_KEYS, NOT_YET
from bpm.definitions.parse.listeners import parse_listeners
from bpm.definitions.parse.nodes import compile_node
from bpm.definitions.parse.patterns import ID_PATTERN, check_keys, node_label
from bpm.definitions.parse.policies import parse_saga
from bpm.definitions.parse.shape import check_metadata
from bpm.definitions.signal_names import is_template
from bpm.definitions.transactions import check_transactions
from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression
from bpm.script_values import compile_script, is_script

MAX_NODES = 2000


#: What may undo an activity: a task that runs, or a plain or manual task (which does
#: nothing: the compensation is done at once, as Camunda 7 passes through one).
COMPENSATION_HANDLERS = frozenset(
    {NodeType.SERVICE_TASK, NodeType.USER_TASK, NodeType.TASK, NodeType.MANUAL_TASK}
)


class GraphBuilder:
    """Collects nodes and flows of every scope, then checks the graph as a whole."""

    def __init__(self) -> None:
        self.raw_nodes: dict[str, tuple[Mapping[str, Any], str | None]] = {}
        self.flows: dict[str, Flow] = {}
        self.flow_scope: dict[str, str | None] = {}
        self.nodes: dict[str, Node] = {}
        self.starts: dict[str | None, str] = {}
        self.message_starts: dict[str, str] = {}
        self.timer_starts: list[str] = []
        self.conditional_starts: list[str] = []
        self.signal_starts: dict[str, str] = {}
        self.boundaries: dict[str, tuple[str, ...]] = {}

    def add_scope(self, raw: Mapping[str, Any], scope: str | None) -> None:
        where = "process" if scope is None else node_label(scope, "subProcess")
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
                f"{node_label(node_id, node_type.value)}: {NOT_YET[node_type]} are not "
                f"supported yet",
                node_id,
            )
        check_keys(
            item, COMMON_NODE_KEYS | NODE_KEYS[node_type], node_label(node_id, kind), node_id
        )
        check_metadata(item, node_label(node_id, kind), node_id)
        self.raw_nodes[node_id] = (item, scope)
        if node_type is NodeType.SUBPROCESS:
            parse_saga(item, node_label(node_id, kind), node_id)
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
        check_keys(item, FLOW_KEYS, f"flow {flow_id!r}", flow_id)
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
        expr: Expression | None = None
        if condition is not None:
            if not isinstance(condition, str) and not is_script(condition):
                raise InvalidDefinition(f"flow {flow_id!r}: 'condition' must be a string", flow_id)
            try:
                if is_script(condition):
                    expr = compile_script(condition, where=f"flow {flow_id!r}", kind="condition")
                else:
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
        refused: list[InvalidDefinition] = []
        for node_id, (raw, scope) in self.raw_nodes.items():
            try:
                self._add_node(node_id, raw, scope, incoming[node_id], outgoing[node_id])
            except InvalidDefinition as exc:  # every node's own problems, then the rest
                refused.append(exc)
        if refused:
            raise InvalidDefinition.joined(refused)
        self._check_scopes()

    def _add_node(
        self,
        node_id: str,
        raw: Mapping[str, Any],
        scope: str | None,
        incoming: list[str],
        outgoing: list[str],
    ) -> None:
        node = compile_node(node_id, raw, scope, tuple(incoming), tuple(outgoing), self.flows)
        self.nodes[node_id] = node
        if node.type is NodeType.START and scope is None and node.message is not None:
            self._add_message_start(node)
        elif node.type is NodeType.START and scope is None and node.timer is not None:
            self._add_timer_start(node)
        elif node.type is NodeType.START and scope is None and node.condition is not None:
            self._only_interrupting(node)
            self.conditional_starts.append(node.id)
        elif node.type is NodeType.START and scope is None and node.signal is not None:
            self._add_signal_start(node)
        elif node.type is NodeType.START:
            if scope in self.starts:
                raise InvalidDefinition(
                    f"node {node_id!r}: a second startEvent in "
                    f"{'the process' if scope is None else repr(scope)} "
                    f"(the first is {self.starts[scope]!r})",
                    node_id,
                )
            self.starts[scope] = node_id

    def _check_scopes(self) -> None:
        scopes = {None} | {
            n for n, (raw, _) in self.raw_nodes.items() if raw.get("type") == NodeType.SUBPROCESS
        }
        for scope in scopes:
            triggered = [
                *self.message_starts.values(),
                *self.timer_starts,
                *self.conditional_starts,
                *self.signal_starts.values(),
            ]
            if scope is None and scope not in self.starts and triggered:
                # Without a none start event, a start without a message begins at the only
                # start event, as in Camunda 7 (``lifecycle.start`` refuses when there are
                # several).
                self.starts[None] = triggered[0]
            if scope not in self.starts:
                inside = "the process" if scope is None else f"subProcess {scope!r}"
                raise InvalidDefinition(f"{inside} has no startEvent", scope)
        event_starts.check(self.nodes, self.starts)
        event_gateways.check(self.nodes, self.flows)
        self.boundaries = check_attachments(self.nodes)
        check_transactions(self.nodes, self.boundaries)
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
            where = node_label(node.id, node.type.value)
            spec = node.compensation
            if spec is not None and spec.node is not None:
                handler = self.nodes.get(spec.node)
                if (
                    handler is None
                    or handler.scope != node.scope
                    or handler.type not in COMPENSATION_HANDLERS
                ):
                    raise InvalidDefinition(
                        f"{where}: compensation node {spec.node!r} must be a serviceTask, "
                        f"userTask, task or manualTask of the same scope",
                        node.id,
                    )
                if handler.listeners or handler.multi_instance:
                    raise InvalidDefinition(
                        f"node {handler.id!r}: a compensation handler activity cannot have "
                        f"listeners or be multi-instance (neither runs when it compensates); "
                        f"put the work in the handler itself",
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

    def _add_message_start(self, node: Node) -> None:
        assert node.message is not None
        if not node.interrupting:
            raise InvalidDefinition(
                f"node {node.id!r} (startEvent): 'interrupting' belongs to the start event of "
                f"an event subprocess",
                node.id,
            )
        if node.message in self.message_starts:
            raise InvalidDefinition(
                f"node {node.id!r} (startEvent): message start event "
                f"{self.message_starts[node.message]!r} already waits for {node.message!r}",
                node.id,
            )
        self.message_starts[node.message] = node.id

    def _add_signal_start(self, node: Node) -> None:
        """A process's signal start event: one per signal name (a second would start the
        process twice for one broadcast)."""
        assert node.signal is not None
        if not node.interrupting:
            raise InvalidDefinition(
                f"node {node.id!r} (startEvent): 'interrupting' belongs to the start event of "
                f"an event subprocess",
                node.id,
            )
        if is_template(node.signal):
            raise InvalidDefinition(
                f"node {node.id!r} (startEvent): signal {node.signal!r} is an expression; a "
                "process's signal start event needs a literal name (no instance to evaluate it)",
                node.id,
            )
        if node.signal in self.signal_starts:
            raise InvalidDefinition(
                f"node {node.id!r} (startEvent): signal start event "
                f"{self.signal_starts[node.signal]!r} already waits for {node.signal!r}",
                node.id,
            )
        self.signal_starts[node.signal] = node.id

    def _add_timer_start(self, node: Node) -> None:
        assert node.timer is not None
        if node.timer.expression is not None:
            raise InvalidDefinition(
                f"node {node.id!r} (startEvent): a timer start event's timer is a literal "
                f"(there are no variables before the instance exists), got "
                f"{node.timer.source!r}",
                node.id,
            )
        self._only_interrupting(node)
        self.timer_starts.append(node.id)

    def _only_interrupting(self, node: Node) -> None:
        if not node.interrupting:
            raise InvalidDefinition(
                f"node {node.id!r} (startEvent): 'interrupting' belongs to the start event of "
                f"an event subprocess",
                node.id,
            )

    def _check_reachable(self) -> None:
        seen: set[str] = set()
        # an event subprocess is entered by its trigger, not a flow: reachable as its scope is
        todo = deque(
            [
                *self.starts.values(),
                *self.message_starts.values(),
                *self.timer_starts,
                *self.conditional_starts,
                *self.signal_starts.values(),
                *(n for n in self.nodes if self.nodes[n].triggered_by_event),
            ]
        )
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
