"""BPMN 2.0 XML import: compile each ``process`` of a file to a JSON definition document.

The mapping is one to one (docs/bpmn.md lists it): every supported element becomes the node or
flow of the same id, every unsupported element or attribute value is refused with its line,
type and id, and each document then goes through ``compile_definition`` like a JSON file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bpm.definitions.bpmn_feel import FeelUnsupported, feel_timer, translate_condition
from bpm.definitions.bpmn_xml import XmlElement, parse_xml
from bpm.definitions.parse import NAME_PATTERN, SAGA_SCOPES, compile_definition
from bpm.errors import InvalidDefinition

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
CAMUNDA = "http://camunda.org/schema/1.0/bpmn"
ZEEBE = "http://camunda.org/schema/zeebe/1.0"
#: Namespaces read as Camunda's, as Camunda 7 and Operaton read them: Activiti's (which Camunda
#: 7 still accepts), the older Camunda one, and Operaton's.
CAMUNDA_ALIASES = frozenset(
    {
        "http://activiti.org/bpmn",
        "http://camunda.org/bpmn",
        "http://operaton.org/schema/1.0/bpmn",
    }
)
#: This project's namespace for attributes such as ``bpm:handler``.
BPM = "https://bpm.dev/schema/1.0"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
#: Namespaces of diagram interchange and of modeler decoration: ignored wherever they appear.
PRESENTATIONAL = {
    "http://www.omg.org/spec/BPMN/20100524/DI",
    "http://www.omg.org/spec/DD/20100524/DC",
    "http://www.omg.org/spec/DD/20100524/DI",
    "http://bpmn.io/schema/bpmn/biocolor/1.0",
    "http://www.omg.org/spec/BPMN/non-normative/color/1.0",
    "http://www.signavio.com",
    "http://camunda.org/schema/modeler/1.0",
}
#: Plain attributes without behaviour here, with the values accepted (None: any value).
HARMLESS: dict[str, set[str] | None] = {
    "isExecutable": None,
    "processType": None,
    "isClosed": None,
    "gatewayDirection": None,
    "startQuantity": {"1"},
    "completionQuantity": {"1"},
    "isInterrupting": {"true"},
    "parallelMultiple": {"false"},
    "instantiate": {"false"},
    "isImmediate": None,
    "implementation": {"##WebService", "##unspecified", "##default"},
    "triggeredByEvent": {"false"},
    "isForCompensation": None,
    "waitForCompletion": {"true"},
}
#: Camunda attributes accepted and ignored: every step is already its own transaction here.
CAMUNDA_IGNORED = {
    "async",
    "asyncBefore",
    "asyncAfter",
    "exclusive",
    "versionTag",
    "isStartableInTasklist",
}
NOT_YET = {
    "inclusiveGateway",
    "eventBasedGateway",
    "complexGateway",
    "callActivity",
    "scriptTask",
    "transaction",
    "adHocSubProcess",
    "dataObject",
    "dataObjectReference",
    "dataStoreReference",
    "ioSpecification",
    "property",
    "dataInputAssociation",
    "dataOutputAssociation",
    "multiInstanceLoopCharacteristics",
    "standardLoopCharacteristics",
    "signalEventDefinition",
    "escalationEventDefinition",
    "conditionalEventDefinition",
    "linkEventDefinition",
    "cancelEventDefinition",
    "timeCycle",
}
_TASK_TYPES = {"serviceTask", "sendTask", "businessRuleTask"}
_HANDLER_CHARS = re.compile(r"[^A-Za-z0-9_.:-]+")
_DEFINITION_TAGS = {"message", "error", "signal", "escalation", "itemDefinition"}


def compile_bpmn(xml: str | bytes) -> list[dict[str, Any]]:
    """Compile every process of a BPMN 2.0 file to a validated definition document.

    Raises ``InvalidDefinition`` naming the line, element type and id of the first problem.
    """
    root = _read_aliases_as_camunda(parse_xml(xml))
    if root.ns != BPMN or root.tag != "definitions":
        raise InvalidDefinition(
            f"line {root.line}: the root element is {root.tag!r} in "
            f"namespace {root.ns!r}, not BPMN 2.0 'definitions' ({BPMN})"
        )
    file = _File(root)
    processes = [child for child in root.children if child.ns == BPMN and child.tag == "process"]
    documents = [file.process(child) for child in processes if not _black_box(child)]
    if not documents:
        raise InvalidDefinition(
            "the BPMN file has no process element"
            if not processes
            else "the BPMN file's processes are all empty (black-box pools)"
        )
    return documents


def _black_box(process: XmlElement) -> bool:
    """A process with no flow elements: the pool of a partner drawn as a black box. It has no
    behaviour, so it compiles to nothing (a file of only such processes is refused)."""
    return process.attrib.get("isExecutable") == "false" and all(
        c.ns != BPMN or c.tag in {"documentation", "extensionElements", "laneSet"}
        for c in process.children
    )


def _ident(el: XmlElement) -> str:
    return f"line {el.line}: {el.tag} {el.attrib.get('id', '(no id)')!r}"


def _reject(el: XmlElement, why: str) -> InvalidDefinition:
    return InvalidDefinition(f"{_ident(el)} {why}", el.attrib.get("id"))


class _Reader:
    """Reads one element and refuses whatever attribute or child it did not consume."""

    def __init__(self, el: XmlElement, owner: XmlElement | None = None) -> None:
        self.el = el
        #: The event an event definition belongs to, named in refusals (definitions seldom
        #: have an id of their own).
        self.owner = owner
        self.used: set[str] = {"id", "name"}
        self.used_children: set[int] = set()

    def attr(self, name: str, ns: str = "") -> str | None:
        key = f"{{{ns}}}{name}" if ns else name
        self.used.add(key)
        return self.el.attrib.get(key)

    def children(self, tag: str, ns: str = BPMN) -> list[XmlElement]:
        found = [c for c in self.el.children if c.ns == ns and c.tag == tag]
        self.used_children.update(id(c) for c in found)
        return found

    def child(self, tag: str, ns: str = BPMN) -> XmlElement | None:
        found = self.children(tag, ns)
        if len(found) > 1:
            raise _reject(found[1], f"appears more than once in {self.el.tag}")
        return found[0] if found else None

    def extension(self, tag: str, ns: str) -> XmlElement | None:
        for ext in (c for c in self.el.children if c.ns == BPMN and c.tag == "extensionElements"):
            for child in ext.children:
                if child.ns == ns and child.tag == tag:
                    self.used_children.add(id(child))
                    return child
        return None

    def finish(self) -> None:
        el = self.el
        for key, value in el.attrib.items():
            if key in self.used:
                continue
            ns, _, local = key[1:].partition("}") if key.startswith("{") else ("", "", key)
            if ns in PRESENTATIONAL or ns == XSI or (ns == CAMUNDA and local in CAMUNDA_IGNORED):
                continue
            allowed = HARMLESS.get(local, set()) if not ns else set()
            if not ns and local in HARMLESS and (allowed is None or value in allowed):
                continue
            prefix = "camunda:" if ns == CAMUNDA else "zeebe:" if ns == ZEEBE else ""
            shown = f"{prefix}{local}" if prefix or not ns else f"{{{ns}}}{local}"
            raise _reject(el, f"attribute {shown}={value!r}{self._in()} is not supported yet")
        for child in el.children:
            if id(child) in self.used_children or child.ns in PRESENTATIONAL:
                continue
            if child.ns == BPMN and child.tag in {"documentation", "incoming", "outgoing"}:
                continue
            if child.ns == BPMN and child.tag == "extensionElements":
                self._check_extensions(child)
                continue
            raise _unsupported(child, inside=el)

    def _in(self) -> str:
        owner = self.owner
        return "" if owner is None else f" (in {owner.tag} {owner.attrib.get('id', '')!r})"

    def _check_extensions(self, ext: XmlElement) -> None:
        for child in ext.children:
            if id(child) in self.used_children or child.ns in PRESENTATIONAL:
                continue
            if _empty_listener(child):
                continue
            raise _reject(
                child,
                f"(extension element in {self.el.tag} "
                f"{self.el.attrib.get('id', '')!r}) is not supported yet",
            )


def _empty_listener(el: XmlElement) -> bool:
    """A Camunda listener the modeler left without an implementation (``class=""``) does
    nothing, so it is dropped like the diagram; one that names code is refused."""
    if el.ns != CAMUNDA or el.tag not in ("taskListener", "executionListener"):
        return False
    code = ("class", "expression", "delegateExpression")
    return (
        not el.children
        and all(not el.attrib.get(a, "").strip() for a in code)
        and set(el.attrib) <= {*code, "event", "id"}
    )


def _unsupported(el: XmlElement, inside: XmlElement | None = None) -> InvalidDefinition:
    where = f" (in {inside.tag} {inside.attrib.get('id', '')!r})" if inside is not None else ""
    if el.ns != BPMN:
        return InvalidDefinition(
            f"line {el.line}: element {{{el.ns}}}{el.tag}{where} is not supported",
            el.attrib.get("id"),
        )
    what = {
        "multiInstanceLoopCharacteristics": " (multi-instance)",
        "standardLoopCharacteristics": " (loop)",
    }.get(el.tag, "")
    return InvalidDefinition(f"{_ident(el)}{what}{where} is not supported yet", el.attrib.get("id"))


def _event_definition(reader: _Reader) -> XmlElement | None:
    """The single ``*EventDefinition`` child of an event, or None for a none event."""
    found = [c for c in reader.el.children if c.ns == BPMN and c.tag.endswith("EventDefinition")]
    if reader.attr("eventDefinitionRef") is not None:
        raise _reject(reader.el, "uses eventDefinitionRef, which is not supported yet")
    if len(found) > 1:
        raise _reject(
            reader.el,
            "has several event definitions (a multiple event), which is not supported yet",
        )
    if not found:
        return None
    reader.used_children.add(id(found[0]))
    if found[0].tag in NOT_YET or found[0].tag not in {
        "terminateEventDefinition",
        "errorEventDefinition",
        "compensateEventDefinition",
        "timerEventDefinition",
        "messageEventDefinition",
    }:
        raise _reject(reader.el, f"with {found[0].tag} is not supported yet")
    return found[0]


def handler_name(text: str) -> str:
    """A valid handler name from a Camunda expression: ``${bean.run(execution)}`` ->
    ``bean.run_execution``."""
    inner = text.strip()
    if len(inner) >= 3 and inner[0] in "$#" and inner[1] == "{" and inner.endswith("}"):
        inner = inner[2:-1]
    name = _HANDLER_CHARS.sub("_", inner.strip()).strip("_.:-")
    if not name or not (name[0].isalpha() or name[0] == "_") or not name.isascii():
        name = "_" + name
    return name


class _File:
    """The ``definitions`` element: its messages and errors, then one process at a time."""

    def __init__(self, root: XmlElement) -> None:
        self.messages: dict[str, str] = {}
        self.errors: dict[str, str | None] = {}
        for child in root.children:
            if child.ns in PRESENTATIONAL:
                continue
            if child.ns != BPMN:
                raise _unsupported(child)
            if child.tag == "message":
                self.messages[child.attrib.get("id", "")] = child.attrib.get(
                    "name", child.attrib.get("id", "")
                )
            elif child.tag == "error":
                self.errors[child.attrib.get("id", "")] = child.attrib.get("errorCode")
            elif child.tag in _DEFINITION_TAGS | {
                "process",
                "collaboration",
                "documentation",
                "extensionElements",
                "category",
            }:
                continue  # declarations without behaviour of their own; uses are checked
            else:
                raise _unsupported(child)

    @staticmethod
    def resolve(ref: str, declared: Mapping[str, Any]) -> str:
        """A reference written as a QName (``tns:myError``) names the declaration with that
        local id when the file declares one."""
        local = _local(ref)
        return local if ref not in declared and local in declared else ref

    def process(self, el: XmlElement) -> dict[str, Any]:
        reader = _Reader(el)
        key = el.attrib.get("id")
        if not key:
            raise _reject(el, "has no id; the process key is the process id")
        doc: dict[str, Any] = {"key": key}
        if el.attrib.get("name"):
            doc["name"] = el.attrib["name"]
        ttl = reader.attr("historyTimeToLive", CAMUNDA)
        if ttl is not None and ttl.strip():
            doc["historyTimeToLive"] = ttl.strip()
        doc.update(_saga(reader))
        lines: dict[str, int] = {key: el.line}
        doc["nodes"], doc["flows"] = self.scope(reader, lines)
        reader.children("laneSet")  # lanes only group nodes for the reader of the diagram
        reader.finish()
        try:
            compile_definition(doc)
        except InvalidDefinition as exc:
            line = lines.get(exc.element or "", el.line)
            raise InvalidDefinition(f"line {line}: process {key!r}: {exc}", exc.element) from None
        return doc

    def scope(
        self, reader: _Reader, lines: dict[str, int]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Nodes and flows of a process or subprocess, in document order."""
        nodes: list[dict[str, Any]] = []
        flows: list[dict[str, Any]] = []
        by_id: dict[str, dict[str, Any]] = {}
        associations = {a.attrib.get("sourceRef", ""): a for a in reader.children("association")}
        compensated: dict[str, XmlElement] = {}
        for_compensation: set[str] = set()
        reader.children("textAnnotation")  # comments on the diagram
        reader.children("group")
        for child in reader.el.children:
            if child.ns != BPMN or id(child) in reader.used_children:
                continue
            if child.tag in {
                "documentation",
                "extensionElements",
                "laneSet",
                "incoming",
                "outgoing",
            } or child.tag.endswith("EventDefinition"):
                continue  # the scope's reader handles these
            reader.used_children.add(id(child))
            if child.tag == "sequenceFlow":
                flows.append(self.flow(child, lines, flows))
                continue
            if child.tag == "boundaryEvent" and _is_compensation(child):
                attached = self.compensation_boundary(child, associations)
                if attached in compensated:
                    raise _reject(child, f"is a second compensation boundary on {attached!r}")
                compensated[attached] = child
                continue
            node = self.node(child, lines)
            if child.attrib.get("isForCompensation") == "true":
                for_compensation.add(node["id"])
            lines[node["id"]] = child.line
            by_id[node["id"]] = node
            nodes.append(node)
        handlers = {
            self.attach_compensation(boundary, activity, associations, by_id, for_compensation)
            for activity, boundary in compensated.items()
        }
        for orphan in sorted(for_compensation - handlers):
            raise InvalidDefinition(
                f'line {lines[orphan]}: activity {orphan!r} is marked isForCompensation="true" '
                f"but no compensation boundary event is associated with it",
                orphan,
            )
        return nodes, flows

    def flow(
        self, el: XmlElement, lines: dict[str, int], flows: list[dict[str, Any]]
    ) -> dict[str, Any]:
        reader = _Reader(el)
        source, target = reader.attr("sourceRef"), reader.attr("targetRef")
        if not source or not target:
            raise _reject(el, "needs sourceRef and targetRef")
        flow_id = el.attrib.get("id")
        if not flow_id:  # BPMN allows it; the engine needs one, made from both ends
            taken = {f["id"] for f in flows} | set(lines)
            flow_id, n = f"{source}__{target}", 2
            while flow_id in taken:
                flow_id, n = f"{source}__{target}_{n}", n + 1
        flow: dict[str, Any] = {"id": flow_id, "source": source, "target": target}
        if el.attrib.get("name"):
            flow["name"] = el.attrib["name"]
        condition = reader.child("conditionExpression")
        if condition is not None:
            language = condition.attrib.get("language")
            if language and language.lower() not in {"juel", "feel", "${juel}"}:
                raise _reject(
                    el,
                    f"has a condition in language {language!r}, which is not "
                    f"supported (JUEL ${{...}}, FEEL =... or plain conditions)",
                )
            try:
                text = translate_condition(condition.text)
            except FeelUnsupported as exc:
                raise _reject(
                    el,
                    f"has a FEEL condition {condition.text.strip()!r} that "
                    f"cannot be translated: {exc}",
                ) from None
            if not text:
                raise _reject(
                    el, "has an empty conditionExpression (remove it for an unconditional flow)"
                )
            flow["condition"] = text
        reader.finish()
        lines[flow_id] = el.line
        return flow

    def node(self, el: XmlElement, lines: dict[str, int]) -> dict[str, Any]:
        reader = _Reader(el)
        node_id = el.attrib.get("id")
        if not node_id:
            raise _reject(el, "has no id")
        node: dict[str, Any] = {"id": node_id}
        if el.attrib.get("name"):
            node["name"] = el.attrib["name"]
        mapper = _MAPPERS.get(el.tag)
        if mapper is None:
            raise _unsupported(el)
        node.update(mapper(self, reader, lines))
        reader.finish()
        return node

    # --- compensation boundaries -----------------------------------------------------------

    def compensation_boundary(self, el: XmlElement, associations: dict[str, XmlElement]) -> str:
        reader = _Reader(el)
        attached = reader.attr("attachedToRef")
        reader.attr("cancelActivity")
        definition = _event_definition(reader)
        reader.finish()
        if definition is not None:
            dr = _Reader(definition, el)
            if dr.attr("waitForCompletion") not in (None, "true"):
                raise _reject(el, 'has waitForCompletion="false", which is not supported')
            if dr.attr("activityRef") is not None:
                raise _reject(
                    el,
                    "is a compensation boundary with an activityRef (only a "
                    "throw event names the activity to compensate)",
                )
            dr.finish()
        if not attached:
            raise _reject(el, "needs attachedToRef")
        if el.attrib.get("id", "") not in associations:
            raise _reject(
                el,
                "is a compensation boundary without an association to its "
                'compensation handler (isForCompensation="true")',
            )
        return attached

    def attach_compensation(
        self,
        boundary: XmlElement,
        activity: str,
        associations: dict[str, XmlElement],
        by_id: dict[str, dict[str, Any]],
        for_compensation: set[str],
    ) -> str:
        association = associations[boundary.attrib.get("id", "")]
        handler = _local(association.attrib.get("targetRef", ""))
        target = by_id.get(activity)
        if target is None:
            raise _reject(
                boundary, f"is attached to {activity!r}, which is not an activity of the same scope"
            )
        if handler not in by_id or handler not in for_compensation:
            raise _reject(
                boundary,
                f"is associated with {handler!r}, which is not an activity "
                f'of the same scope marked isForCompensation="true"',
            )
        if "compensation" in target:
            raise _reject(boundary, f"is a second compensation boundary on {activity!r}")
        target["compensation"] = {"node": handler}
        return handler


def _local(ref: str) -> str:
    """``tns:task`` -> ``task``: element references may carry a namespace prefix."""
    return ref.rsplit(":", 1)[-1]


def _is_compensation(el: XmlElement) -> bool:
    return any(c.ns == BPMN and c.tag == "compensateEventDefinition" for c in el.children)


# --- one mapper per element type ---------------------------------------------------------------

Mapped = dict[str, Any]


def _start(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    if _event_definition(r) is not None:
        raise _reject(r.el, "has an event definition; only none start events are supported yet")
    return {"type": "startEvent"}


def _end(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    definition = _event_definition(r)
    node: Mapped = {"type": "endEvent"}
    if definition is None:
        return node
    if definition.tag == "terminateEventDefinition":
        node["terminate"] = True
    elif definition.tag == "errorEventDefinition":
        node["error"] = _error_code(file, r.el, definition, catch=False)
    elif definition.tag == "compensateEventDefinition":
        node.update(_compensate(definition, r.el))
    else:
        raise _reject(r.el, f"with {definition.tag} is not supported yet")
    return node


def _compensate(definition: XmlElement, owner: XmlElement) -> Mapped:
    reader = _Reader(definition, owner)
    node: Mapped = {"compensate": True}
    activity = reader.attr("activityRef")
    reader.finish()
    if activity:
        node["activity"] = activity
    return node


def _error_code(file: _File, event: XmlElement, definition: XmlElement, *, catch: bool) -> str:
    reader = _Reader(definition, event)
    ref = reader.attr("errorRef")
    reader.finish()
    if not ref:
        if catch:
            return "*"
        raise _reject(event, "throws an error without errorRef")
    ref = file.resolve(ref, file.errors)
    if ref not in file.errors:
        return ref  # as Camunda: an errorRef naming no <error> is the code itself
    code = file.errors[ref]
    if code is None or not code.strip():
        if catch:
            return "*"
        raise _reject(event, f"throws error {ref!r}, which has no errorCode")
    return code


def _service(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    found: list[tuple[str, str, str]] = []  # (key, value, where from)
    camunda_type = r.attr("type", CAMUNDA)
    topic = r.attr("topic", CAMUNDA)
    if camunda_type is not None:
        if camunda_type != "external":
            raise _reject(r.el, f"has camunda:type={camunda_type!r}; only 'external' is supported")
        if not topic:
            raise _reject(r.el, 'has camunda:type="external" without camunda:topic')
        found.append(("topic", topic, "camunda:topic"))
    elif topic is not None:
        raise _reject(r.el, 'has camunda:topic without camunda:type="external"')
    task_definition = r.extension("taskDefinition", ZEEBE)
    if task_definition is not None:
        zeebe = _Reader(task_definition)
        kind = zeebe.attr("type")
        retries = zeebe.attr("retries")
        zeebe.finish()
        if not kind or kind.startswith("="):
            raise _reject(r.el, "needs a literal zeebe:taskDefinition type (FEEL not supported)")
        found.append(("topic", kind, "zeebe:taskDefinition"))
    else:
        retries = None
    for attr, ns, key in (("handler", BPM, "handler"), ("topic", BPM, "topic")):
        value = r.attr(attr, ns)
        if value is not None:
            found.append((key, value, f"bpm:{attr}"))
    java = r.attr("class", CAMUNDA)
    if java is not None:
        found.append(("handler", java.strip().rsplit(".", 1)[-1], "camunda:class"))
    for attr in ("expression", "delegateExpression"):
        value = r.attr(attr, CAMUNDA)
        if value is not None:
            found.append(("handler", handler_name(value), f"camunda:{attr}"))
    if r.el.attrib.get(f"{{{CAMUNDA}}}resultVariable") is not None:
        raise _reject(
            r.el,
            "has camunda:resultVariable, which is not supported yet; return the "
            "result from the handler",
        )
    if not found and (alien := _foreign_implementation(r.el)):
        raise _reject(
            r.el,
            f"has {alien}, in a namespace bpm does not know: Camunda 7's is "
            f"{CAMUNDA}, this project's {BPM}",
        )
    if not found:
        raise _reject(
            r.el,
            "has no implementation: give bpm:handler, bpm:topic, camunda:type="
            '"external" with camunda:topic, zeebe:taskDefinition, '
            "camunda:class, camunda:expression or camunda:delegateExpression",
        )
    if len(found) > 1:
        raise _reject(
            r.el, f"has several implementations ({', '.join(f[2] for f in found)}); give one"
        )
    node: Mapped = {"type": "serviceTask", found[0][0]: found[0][1]}
    if retries is not None:
        if not retries.isdigit() or int(retries) < 1:
            raise _reject(
                r.el, f"has zeebe:taskDefinition retries={retries!r}; expected a positive integer"
            )
        node["retry"] = {"max_attempts": int(retries)}
    return node


def _read_aliases_as_camunda(root: XmlElement) -> XmlElement:
    """Elements and attributes in ``CAMUNDA_ALIASES`` become Camunda's, everywhere."""
    todo = [root]
    while todo:
        el = todo.pop()
        if el.ns in CAMUNDA_ALIASES:
            el.ns = CAMUNDA
        if any(key.startswith("{") for key in el.attrib):
            el.attrib = {_camunda_key(key): value for key, value in el.attrib.items()}
        todo.extend(el.children)
    return root


def _camunda_key(key: str) -> str:
    ns, _, local = key[1:].partition("}") if key.startswith("{") else ("", "", key)
    return f"{{{CAMUNDA}}}{local}" if ns in CAMUNDA_ALIASES else key


def _foreign_implementation(el: XmlElement) -> str | None:
    """An implementation attribute in a namespace the importer does not read, such as the old
    ``http://camunda.org/bpmn`` or Activiti's: named, so the refusal says what to change."""
    for key, value in el.attrib.items():
        ns, _, local = key[1:].partition("}") if key.startswith("{") else ("", "", key)
        if ns not in ("", CAMUNDA, ZEEBE, BPM) and local in (
            "class",
            "expression",
            "delegateExpression",
            "type",
            "topic",
            "handler",
        ):
            return f"{local}={value!r} ({{{ns}}})"
    return None


def _user(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    node: Mapped = {"type": "userTask"}
    assignee = r.attr("assignee", CAMUNDA)
    groups = r.attr("candidateGroups", CAMUNDA)
    zeebe = r.extension("assignmentDefinition", ZEEBE)
    if zeebe is not None:
        zr = _Reader(zeebe)
        assignee = assignee or zr.attr("assignee")
        groups = groups or zr.attr("candidateGroups")
        zr.finish()
    for name, value in (("assignee", assignee), ("candidateGroups", groups)):
        if value is not None and re.search(r"\$\{|#\{|^\s*=", value):
            raise _reject(
                r.el,
                f"has the expression {value!r} as its {name}; only literal names are supported yet",
            )
    if assignee is not None and assignee.strip():
        node["assignee"] = assignee.strip()
    if groups is not None:
        node["candidate_groups"] = [g.strip() for g in groups.split(",") if g.strip()]
    return node


def _receive(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    ref = r.attr("messageRef")
    return {"type": "receiveTask", "message": _message(file, r.el, ref)}


def _message(file: _File, el: XmlElement, ref: str | None) -> str:
    if not ref:
        return el.attrib.get("id", "")  # no message: correlate by the element's own id
    ref = file.resolve(ref, file.messages)
    if ref not in file.messages:
        raise _reject(el, f"refers to message {ref!r}, which the file does not declare")
    name = file.messages[ref]
    if "${" in name or "#{" in name or name.startswith("="):
        raise _reject(
            el,
            f"refers to message {ref!r} named {name!r}: expressions in message "
            f"names are not supported yet",
        )
    if not NAME_PATTERN.match(name):
        raise _reject(
            el,
            f"refers to message {ref!r} named {name!r}, which is not a name the "
            f"engine correlates by (letters, digits, _ . : -, no spaces)",
        )
    return name


def _pass(kind: str) -> Any:
    def mapper(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
        return {"type": kind}

    return mapper


def _exclusive(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    node: Mapped = {"type": "exclusiveGateway"}
    default = r.attr("default")
    if default:
        node["default"] = default
    return node


def _timer(definition: XmlElement, owner: XmlElement) -> Mapped:
    reader = _Reader(definition, owner)
    duration = reader.child("timeDuration")
    date = reader.child("timeDate")
    cycle = reader.child("timeCycle")
    reader.finish()
    if cycle is not None:
        raise _reject(owner, "has a timeCycle timer, which is not supported yet")
    if (duration is None) == (date is None):
        raise _reject(owner, "needs exactly one of timeDuration or timeDate")
    key, element = ("duration", duration) if duration is not None else ("date", date)
    assert element is not None
    value = element.text.strip()
    if value.startswith("="):
        try:
            return {key: feel_timer(value)}
        except FeelUnsupported as exc:
            raise _reject(owner, f"has the FEEL timer {value!r}: {exc}") from exc
    if value.startswith("#{") and value.endswith("}"):
        value = "${" + value[2:]
    return {key: _spiff_timer_body(value)}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_QUOTED = re.compile(r"""(["'])([^"'\\]*)\1""")


def _spiff_timer_body(value: str) -> str:
    """SpiffWorkflow reads every timer body as a Python expression: a quoted literal
    (``"PT1H"``) is the literal, a bare variable name (``due_time``) is that variable's value
    (``${due_time}``). Anything else stays as written for the timer parser to accept or refuse.
    An ISO duration such as ``PT5M`` also looks like a name; it stays a literal."""
    if quoted := _QUOTED.fullmatch(value):
        return quoted[2]
    if _NAME.fullmatch(value) and not _is_iso(value):
        return "${" + value + "}"
    return value


def _is_iso(value: str) -> bool:
    """Shaped like an ISO 8601 duration (``P1D``, ``PT5M``, ``P1M``): left for the timer parser,
    which accepts it or says why not."""
    return re.fullmatch(r"PT?\d.*", value) is not None


def _catch(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    definition = _event_definition(r)
    if definition is not None and definition.tag == "timerEventDefinition":
        return {"type": "timerEvent", **_timer(definition, r.el)}
    if definition is not None and definition.tag == "messageEventDefinition":
        mr = _Reader(definition, r.el)
        ref = mr.attr("messageRef")
        mr.finish()
        return {"type": "messageEvent", "message": _message(file, r.el, ref)}
    what = definition.tag if definition is not None else "no event definition"
    raise _reject(r.el, f"with {what} is not supported yet (timer or message only)")


def _throw(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    definition = _event_definition(r)
    if definition is None:
        return {"type": "task"}  # a none throw event only marks a point of the path
    if definition.tag == "compensateEventDefinition":
        node: Mapped = {"type": "compensationThrow", **_compensate(definition, r.el)}
        node.pop("compensate")
        return node
    raise _reject(r.el, f"with {definition.tag} is not supported yet")


def _boundary(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    attached = r.attr("attachedToRef")
    cancel = r.attr("cancelActivity")
    definition = _event_definition(r)
    if not attached:
        raise _reject(r.el, "needs attachedToRef")
    node: Mapped = {"type": "boundaryEvent", "attachedTo": attached}
    if definition is not None and definition.tag == "timerEventDefinition":
        node["timer"] = _timer(definition, r.el)
        if cancel == "false":
            node["interrupting"] = False
    elif definition is not None and definition.tag == "errorEventDefinition":
        if cancel == "false":
            raise _reject(
                r.el,
                'is an error boundary with cancelActivity="false"; error '
                "boundaries always interrupt",
            )
        node["error"] = _error_code(file, r.el, definition, catch=True)
    else:
        what = definition.tag if definition is not None else "no event definition"
        raise _reject(r.el, f"with {what} is not supported yet (timer, error or compensation)")
    if cancel not in (None, "true", "false"):
        raise _reject(r.el, f"has cancelActivity={cancel!r}")
    return node


def _subprocess(file: _File, r: _Reader, lines: dict[str, int]) -> Mapped:
    if r.attr("triggeredByEvent") == "true":
        raise _reject(
            r.el, 'is an event subprocess (triggeredByEvent="true"), which is not supported yet'
        )
    saga = _saga(r)
    nodes, flows = file.scope(r, lines)
    return {"type": "subProcess", **saga, "nodes": nodes, "flows": flows}


def _saga(r: _Reader) -> Mapped:
    """``bpm:saga`` on a process or subprocess: the scope's ``saga`` (none, local or global)."""
    saga = r.attr("saga", BPM)
    if saga is None:
        return {}
    if saga not in SAGA_SCOPES:
        raise _reject(r.el, f"has bpm:saga={saga!r}; expected none, local or global")
    return {"saga": saga}


_MAPPERS: dict[str, Any] = {
    "startEvent": _start,
    "endEvent": _end,
    "userTask": _user,
    "receiveTask": _receive,
    "manualTask": _pass("manualTask"),
    "task": _pass("task"),
    "exclusiveGateway": _exclusive,
    "parallelGateway": _pass("parallelGateway"),
    "intermediateCatchEvent": _catch,
    "intermediateThrowEvent": _throw,
    "boundaryEvent": _boundary,
    "subProcess": _subprocess,
    **dict.fromkeys(_TASK_TYPES, _service),
}
