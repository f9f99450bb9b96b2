"""BPMN 2.0 XML import: compile each ``process`` of a file to a JSON definition document.

The mapping is one to one (docs/bpmn.md lists it): every supported element becomes the node or
flow of the same id, every unsupported element or attribute value is refused with its line,
qualified name and id, and each document then goes through ``compile_definition`` like a JSON
file. The import goes on past a refused element, and the structural checks run over what it
could read (refused nodes stand as placeholders), so one refusal lists every problem in the file.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from bpm.definitions import bpmn_calls, bpmn_common, bpmn_listeners
from bpm.definitions import bpmn_camunda as camunda
from bpm.definitions import bpmn_events as events
from bpm.definitions import bpmn_placeholders as placeholders
from bpm.definitions import bpmn_tasks as tasks
from bpm.definitions import bpmn_transactions as transactions
from bpm.definitions.bpmn_compensation import (
    attach_compensation,
    compensation_boundary,
    is_compensation,
)
from bpm.definitions.bpmn_conditions import flow_condition
from bpm.definitions.bpmn_declarations import Declarations
from bpm.definitions.bpmn_handlers import handler_name
from bpm.definitions.bpmn_links import join_links
from bpm.definitions.bpmn_multi_instance import LOOPS
from bpm.definitions.bpmn_names import BPM, BPMN, CAMUNDA
from bpm.definitions.bpmn_reader import (
    Reader,
    foreign,
    ignore_element,
    not_yet,
    problems_of,
    read_aliases_as_camunda,
    refusal,
    reject,
)
from bpm.definitions.bpmn_unreachable import drop_unreachable
from bpm.definitions.bpmn_xml import XmlElement, parse_xml
from bpm.definitions.parse.document import compile_definition
from bpm.definitions.parse.policies import SAGA_SCOPES
from bpm.errors import InvalidDefinition

__all__ = ["BpmnImport", "compile_bpmn", "handler_name", "import_bpmn"]
Mapped = dict[str, Any]
#: The node type of a BPMN element whose mapper refused it, for reading its extensions.
_TYPE_OF = {**dict.fromkeys((*tasks.SERVICE_LIKE, "scriptTask", "businessRuleTask"), "serviceTask")}
_SCOPE_PARTS = {
    "documentation",
    "extensionElements",
    "laneSet",
    "incoming",
    "outgoing",
    *LOOPS,
    *bpmn_common.METADATA,
}


@dataclass(frozen=True)
class BpmnImport:
    """What a BPMN file compiles to: one validated document per process, and what the
    import accepted without behaviour and says so (``line N: <what>`` each: another
    vendor's extensions, attributes Camunda 7 ignores where they are)."""

    documents: list[dict[str, Any]]
    ignored: list[str]


def compile_bpmn(
    xml: str | bytes, *, handlers: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """Compile every process of a BPMN 2.0 file to a validated definition document.

    ``handlers``: the names registered where the file is deployed; a script task runs the one
    named like it (scripts never run). Raises ``InvalidDefinition`` listing every problem
    found, one ``line N: ...`` per line.
    """
    return import_bpmn(xml, handlers=handlers).documents


def import_bpmn(xml: str | bytes, *, handlers: Collection[str] | None = None) -> BpmnImport:
    """``compile_bpmn``, with the list of what was ignored (``bpm deploy --check`` prints it)."""
    root = read_aliases_as_camunda(parse_xml(xml))
    if root.ns != BPMN or root.tag != "definitions":
        raise InvalidDefinition(
            f"line {root.line}: the root element is {root.tag!r} in "
            f"namespace {root.ns!r}, not BPMN 2.0 'definitions' ({BPMN})"
        )
    file = _File(root, handlers)
    processes = [child for child in root.children if child.ns == BPMN and child.tag == "process"]
    documents = [file.process(child) for child in _runnable(processes)]
    if file.problems:
        raise refusal(file.problems, file.first_element, file.elements)
    if not documents:
        raise InvalidDefinition(
            f"line {root.line}: "
            + (
                "the BPMN file has no process element"
                if not processes
                else "the BPMN file's processes are all empty (black-box pools)"
            )
        )
    return BpmnImport(documents, list(dict.fromkeys(root.ignored)))


def _runnable(processes: list[XmlElement]) -> list[XmlElement]:
    """The processes to compile. Next to a process marked ``isExecutable="true"``, one marked
    ``"false"`` is documentation (a partner's pool, a sketch), which Camunda 7 does not deploy
    either; in a file where none is marked executable (other modelers leave the flag false),
    every process that is not an empty pool is compiled."""
    if any(p.attrib.get("isExecutable") == "true" for p in processes):
        return [p for p in processes if p.attrib.get("isExecutable") != "false"]
    return [p for p in processes if not _black_box(p)]


def _black_box(process: XmlElement) -> bool:
    """A process with no flow elements: a partner's pool drawn as a black box, compiled to
    nothing (a file of only such processes is refused)."""
    return process.attrib.get("isExecutable") == "false" and all(
        c.ns != BPMN or c.tag in {"documentation", "extensionElements", "laneSet"}
        for c in process.children
    )


class _File:
    """The ``definitions`` element: its declarations, then one process at a time, collecting
    the problems of every element."""

    def __init__(self, root: XmlElement, handlers: Collection[str] | None) -> None:
        self.handlers = handlers
        self.root = root
        self.problems: list[str] = []
        self.first_element: str | None = None
        #: The element of each problem line whose element is known.
        self.elements: dict[str, str] = {}
        self.decl = Declarations(root, self.problems)
        #: Ids of the refused nodes and flows standing as placeholders (``placeholders``).
        self.placeholders: set[str] = set()

    def record(self, exc: InvalidDefinition) -> None:
        if self.first_element is None:
            self.first_element = exc.element
        for line in problems_of(exc):
            found = exc.element_of(line)
            if found is not None:
                self.elements.setdefault(line, found)
            self.problems.append(line)

    def process(self, el: XmlElement) -> dict[str, Any]:
        reader = Reader(el)
        key = el.attrib.get("id")
        if not key:
            self.record(reject(el, "has no id; the process key is the process id", "add one"))
            key = "process"
        before = len(self.problems)
        doc: dict[str, Any] = {"key": key}
        if el.attrib.get("name"):
            doc["name"] = el.attrib["name"]
        ttl = reader.attr("historyTimeToLive", CAMUNDA)
        if ttl is not None and ttl.strip():
            doc["historyTimeToLive"] = ttl.strip()
        self.attempt(lambda: doc.update(_saga(reader)))
        self.attempt(lambda: doc.update(bpmn_common.process_metadata(reader)))
        self.data_objects: list[Mapped] = []
        lines: dict[str, int] = {key: el.line}
        doc["nodes"], doc["flows"] = self.scope(reader, lines)
        reader.children("laneSet")  # lanes only group nodes for the reader of the diagram
        for tag in bpmn_common.METADATA:
            reader.children(tag)
        if self.data_objects:
            doc["dataObjects"] = self.data_objects
        self.attempt(reader.finish)
        self.validate(doc, lines, el.line, refused=len(self.problems) > before)
        return doc

    def validate(self, doc: Mapped, lines: dict[str, int], line: int, *, refused: bool) -> None:
        """The structural checks, over what the import could read: a refused node stands
        there as a placeholder, so the flows around it still hold, and a problem the
        validator finds at a placeholder (or a flow touching one) is not reported, since
        it follows from the refusal already listed."""
        key = doc["key"]
        dropped, problem = drop_unreachable(doc, compile_definition, allow=not refused)
        for node_id in dropped:
            self.root.ignored.append(
                f"line {lines.get(node_id, line)}: process {key!r}: node {node_id!r} is "
                "unreachable from the start event of its scope, so it never runs (as in "
                "Camunda 7); left out"
            )
        if problem is None:
            return
        for text in problems_of(problem):  # each node's own problems, one line each
            element = problem.element_of(text)
            if refused and self.follows_from_refusal(text, element):
                continue
            if not text.startswith(f"process {key!r}"):
                text = f"process {key!r}: {text}"
            at = lines.get(element or "", line)
            self.record(InvalidDefinition(f"line {at}: {text}", element))

    def follows_from_refusal(self, text: str, element: str | None) -> bool:
        return element in self.placeholders or any(
            f"{found!r}" in text for found in self.placeholders
        )

    def attempt(self, step: Any) -> Any:
        """Run one import step; a refusal is recorded and the import goes on."""
        try:
            return step()
        except InvalidDefinition as exc:
            return self.record(exc)

    def scope(self, reader: Reader, lines: dict[str, int]) -> tuple[list[Mapped], list[Mapped]]:
        """Nodes and flows of a process or subprocess, in document order."""
        nodes: list[Mapped] = []
        flows: list[Mapped] = []
        by_id: dict[str, Mapped] = {}
        associations = {a.attrib.get("sourceRef", ""): a for a in reader.children("association")}
        compensated: dict[str, XmlElement] = {}
        for_compensation: set[str] = set()
        reader.children("textAnnotation")  # comments on the diagram
        reader.children("group")
        for child in reader.el.children:
            if child.ns != BPMN and foreign(child.ns) and id(child) not in reader.used_children:
                reader.used_children.add(id(child))
                ignore_element(child)
            if child.ns != BPMN or id(child) in reader.used_children:
                continue
            if child.tag in _SCOPE_PARTS or child.tag.endswith("EventDefinition"):
                continue  # the scope's reader handles these
            reader.used_children.add(id(child))
            if child.tag in bpmn_common.DATA_OBJECTS:
                found = self.attempt(lambda child=child: bpmn_common.data_object(child))
                if found is not None:
                    self.data_objects.append(found)
            elif child.tag == "sequenceFlow":
                flow = self.attempt(lambda child=child: self.flow(child, lines, flows))
                if flow is None:
                    flow = placeholders.flow(child)
                    self.placeholders.update(p["id"] for p in [flow] if p is not None)
                if flow is not None:
                    lines.setdefault(flow["id"], child.line)
                    flows.append(flow)
            elif child.tag == "boundaryEvent" and is_compensation(child):
                self.attempt(
                    lambda child=child: compensation_boundary(child, associations, compensated)
                )
            else:
                node = self.attempt(lambda child=child: self.node(child, lines))
                if node is None:
                    node = placeholders.node(child)
                    if node is None:
                        continue
                    self.placeholders.add(node["id"])
                if child.attrib.get("isForCompensation") == "true":
                    for_compensation.add(node["id"])
                lines[node["id"]] = child.line
                by_id[node["id"]] = node
                nodes.append(node)
        self.attempt(lambda: join_links(nodes, flows, lines))
        handlers = set()
        for activity, boundary in compensated.items():
            handlers.add(
                self.attempt(
                    lambda a=activity, b=boundary: attach_compensation(
                        b, a, associations, by_id, for_compensation
                    )
                )
            )
        for orphan in sorted(for_compensation - handlers):
            self.record(
                InvalidDefinition(
                    f'line {lines[orphan]}: activity {orphan!r} is marked isForCompensation="true" '
                    f"but no compensation boundary event is associated with it; associate one, "
                    f"or remove the marker",
                    orphan,
                )
            )
        return nodes, flows

    def flow(self, el: XmlElement, lines: dict[str, int], flows: list[Mapped]) -> Mapped:
        reader = Reader(el)
        source, target = reader.attr("sourceRef"), reader.attr("targetRef")
        if not source or not target:
            raise reject(el, "needs sourceRef and targetRef")
        flow_id = el.attrib.get("id")
        if not flow_id:  # BPMN allows it; the engine needs one, made from both ends
            taken = {f["id"] for f in flows} | set(lines)
            flow_id, n = f"{source}__{target}", 2
            while flow_id in taken:
                flow_id, n = f"{source}__{target}_{n}", n + 1
        flow: Mapped = {"id": flow_id, "source": source, "target": target}
        if el.attrib.get("name"):
            flow["name"] = el.attrib["name"]
        condition = reader.child("conditionExpression")
        if condition is not None:
            flow["condition"] = flow_condition(el, condition)
        flow.update(camunda.properties(reader))
        if (text := camunda.documentation(el)) is not None:
            flow["documentation"] = text
        flow.update(bpmn_listeners.listeners(reader, task_listeners=False, on_flow=True))
        reader.finish()
        lines[flow_id] = el.line
        return flow

    def node(self, el: XmlElement, lines: dict[str, int]) -> Mapped:
        reader = Reader(el)
        node_id = el.attrib.get("id")
        if not node_id:
            raise reject(el, "has no id", "give every flow node an id")
        node: Mapped = {"id": node_id}
        if el.attrib.get("name"):
            node["name"] = el.attrib["name"]
        mapper = _MAPPERS.get(el.tag)
        if mapper is None:
            raise not_yet(el)
        found: list[str] = []
        try:
            node.update(mapper(self, reader, lines))
        except InvalidDefinition as exc:
            found += problems_of(exc)
        # read even when the mapper refused: a supported extension around the refused
        # construct is read (and refused only for a cause of its own), never listed unread
        node.setdefault("type", _TYPE_OF.get(el.tag, el.tag))
        try:
            node.update(bpmn_common.common(reader, node))
        except InvalidDefinition as exc:
            found += problems_of(exc)
        if found:
            extra = reader.leftovers(extensions_only=True)
            raise refusal([*found, *extra], node_id) from None
        reader.finish()
        return node


def _subprocess(file: _File, r: Reader, lines: dict[str, int]) -> Mapped:
    triggered = r.attr("triggeredByEvent")
    if triggered not in (None, "true", "false"):
        raise reject(r.el, f"has triggeredByEvent={triggered!r}", "use true or false")
    saga = file.attempt(lambda: _saga(r)) or {}
    nodes, flows = file.scope(r, lines)
    esp = {"triggeredByEvent": True} if triggered == "true" else {}
    return {"type": "subProcess", **esp, **saga, "nodes": nodes, "flows": flows}


def _saga(r: Reader) -> Mapped:
    """``bpm:saga`` on a process or subprocess: the scope's ``saga`` (none, local or global)."""
    saga = r.attr("saga", BPM)
    if saga is None:
        return {}
    if saga not in SAGA_SCOPES:
        raise reject(r.el, f"has bpm:saga={saga!r}", "use none, local or global")
    return {"saga": saga}


def _declared(mapper: Any) -> Any:
    """A mapper of the element modules, which need only the file's declarations."""

    def mapped(file: _File, r: Reader, lines: dict[str, int]) -> Mapped:
        return dict(mapper(file.decl, r))

    return mapped


_MAPPERS: dict[str, Any] = {
    "startEvent": _declared(events.start),
    "endEvent": _declared(transactions.end),
    "userTask": _declared(tasks.user),
    "receiveTask": _declared(tasks.receive),
    "manualTask": _declared(tasks.plain("manualTask")),
    "task": _declared(tasks.plain("task")),
    "exclusiveGateway": _declared(tasks.exclusive),
    "inclusiveGateway": _declared(tasks.inclusive),
    "eventBasedGateway": _declared(tasks.event_based),
    "parallelGateway": _declared(tasks.plain("parallelGateway")),
    "intermediateCatchEvent": _declared(events.catch),
    "intermediateThrowEvent": _declared(events.throw),
    "boundaryEvent": _declared(transactions.boundary),
    "subProcess": _subprocess,
    "transaction": lambda file, r, lines: {
        **_subprocess(file, r, lines),
        **transactions.transaction(r),
    },
    **dict.fromkeys(tasks.SERVICE_LIKE, _declared(tasks.service)),
    "businessRuleTask": _declared(tasks.business_rule),
    "scriptTask": lambda file, r, lines: tasks.script(file.decl, r, file.handlers),
    "callActivity": lambda file, r, lines: bpmn_calls.call_activity(r),
}
