"""The modeler's own layout of a deployed BPMN file (its BPMNDI), read for the SVG renderer.

A BPMN file carries, beside its processes, one or more ``BPMNDiagram`` planes: a shape
(``BPMNShape``: bounds, ``isExpanded``, ``isHorizontal``, a label's bounds) per drawn element
and an edge (``BPMNEdge``: waypoints, a label's bounds) per drawn connection. ``read_diagram``
picks the plane that draws one process (the process itself, or a collaboration with a pool
for it) and returns what is drawn there for that process, typed: the pools and lanes, the
flow nodes with the facts their BPMN symbol needs (what triggers an event, whether it throws,
its loop marker), the text annotations, data objects and stores, and the sequence flows,
message flows and associations. Other processes' pools are kept as empty pools (their
contents are another process's diagram).

The XML goes through ``bpm.definitions.bpmn_xml`` (defusedxml, size and depth limits), as the
importer's does; a file without a plane for the process gives ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from bpm.definitions.bpmn_xml import XmlElement, parse_xml

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
BPMNDI = "http://www.omg.org/spec/BPMN/20100524/DI"
DC = "http://www.omg.org/spec/DD/20100524/DC"
DI = "http://www.omg.org/spec/DD/20100524/DI"


class Trigger(Enum):
    """What an event waits for or throws: its event definition (BPMN draws one icon each)."""

    MESSAGE = "message"
    TIMER = "timer"
    SIGNAL = "signal"
    ERROR = "error"
    ESCALATION = "escalation"
    COMPENSATION = "compensation"
    CONDITIONAL = "conditional"
    LINK = "link"
    TERMINATE = "terminate"
    CANCEL = "cancel"
    MULTIPLE = "multiple"
    PARALLEL_MULTIPLE = "parallelMultiple"


class Loop(Enum):
    """The marker at the bottom of an activity that repeats."""

    PARALLEL = "parallel"
    SEQUENTIAL = "sequential"
    STANDARD = "loop"


class Shape(Enum):
    """The family of symbol an element is drawn with."""

    EVENT = "event"
    GATEWAY = "gateway"
    TASK = "task"
    SUBPROCESS = "subprocess"
    POOL = "pool"
    LANE = "lane"
    ANNOTATION = "annotation"
    DATA_OBJECT = "data-object"
    DATA_STORE = "data-store"
    GROUP = "group"


_TRIGGERS = {f"{t.value}EventDefinition": t for t in Trigger}
_TRIGGERS["compensateEventDefinition"] = Trigger.COMPENSATION  # BPMN's element name
_EVENTS = frozenset(
    {
        "startEvent",
        "endEvent",
        "intermediateCatchEvent",
        "intermediateThrowEvent",
        "boundaryEvent",
    }
)
_THROWING = frozenset({"endEvent", "intermediateThrowEvent"})
_GATEWAYS = frozenset(
    {
        "exclusiveGateway",
        "parallelGateway",
        "inclusiveGateway",
        "eventBasedGateway",
        "complexGateway",
    }
)
_TASKS = frozenset(
    {
        "task",
        "userTask",
        "serviceTask",
        "scriptTask",
        "sendTask",
        "receiveTask",
        "manualTask",
        "businessRuleTask",
        "callActivity",
    }
)
_SUBPROCESSES = frozenset({"subProcess", "transaction", "adHocSubProcess"})
_OTHERS = {
    "participant": Shape.POOL,
    "lane": Shape.LANE,
    "textAnnotation": Shape.ANNOTATION,
    "dataObjectReference": Shape.DATA_OBJECT,
    "dataObject": Shape.DATA_OBJECT,
    "dataInput": Shape.DATA_OBJECT,
    "dataOutput": Shape.DATA_OBJECT,
    "dataStoreReference": Shape.DATA_STORE,
    "group": Shape.GROUP,
}


@dataclass(frozen=True)
class Bounds:
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass(frozen=True)
class Element:
    """The BPMN element a shape draws: what its symbol needs to know."""

    id: str
    tag: str  # the BPMN local name: ``userTask``, ``boundaryEvent``, ``participant``...
    shape: Shape
    name: str = ""
    trigger: Trigger | None = None
    throwing: bool = False
    #: Boundary events (``cancelActivity``) and event subprocess starts (``isInterrupting``).
    interrupting: bool = True
    loop: Loop | None = None
    for_compensation: bool = False
    triggered_by_event: bool = False
    attached_to: str | None = None


@dataclass(frozen=True)
class DiShape:
    element: Element
    bounds: Bounds
    expanded: bool
    horizontal: bool
    label: Bounds | None


@dataclass(frozen=True)
class DiEdge:
    id: str
    tag: str  # ``sequenceFlow``, ``messageFlow``, ``association``, data associations
    name: str
    waypoints: tuple[tuple[float, float], ...]
    label: Bounds | None
    #: A sequence flow: its gateway's or activity's default flow (a slash at its start), or
    #: one with a condition leaving an activity (a small diamond at its start).
    default: bool = False
    conditional: bool = False


@dataclass(frozen=True)
class Diagram:
    """What the modeler drew for one process, in the order the file lists it."""

    process_id: str
    shapes: tuple[DiShape, ...]
    edges: tuple[DiEdge, ...]

    def ids(self) -> frozenset[str]:
        return frozenset(s.element.id for s in self.shapes)

    def extent(self) -> Bounds:
        """The smallest box holding every shape, waypoint and label."""
        xs: list[float] = []
        ys: list[float] = []
        for s in self.shapes:
            for b in (s.bounds, s.label):
                if b is not None:
                    xs += [b.x, b.x + b.w]
                    ys += [b.y, b.y + b.h]
        for e in self.edges:
            xs += [x for x, _ in e.waypoints]
            ys += [y for _, y in e.waypoints]
        if not xs:
            return Bounds(0, 0, 0, 0)
        return Bounds(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))


def read_diagram(xml: str | bytes, process_id: str) -> Diagram | None:
    """The diagram of ``process_id`` in ``xml`` (see the module docstring), or ``None``."""
    root = parse_xml(xml)
    owner: dict[str, str | None] = {}  # element id -> the process it belongs to (None: none)
    found: dict[str, XmlElement] = {}
    for el, process in _semantic(root, None):
        ident = el.attrib.get("id")
        if ident:
            found[ident] = el
            owner[ident] = process
    for el in found.values():  # a pool belongs to the process it holds
        if el.tag == "participant":
            owner[str(el.attrib.get("id"))] = el.attrib.get("processRef")
    plane = _plane_of(root, process_id, found, owner)
    if plane is None:
        return None
    shapes: list[DiShape] = []
    edges: list[DiEdge] = []
    for di in plane.children:
        ref = di.attrib.get("bpmnElement", "")
        drawn = found.get(ref)
        if drawn is None or (
            owner.get(ref) not in (process_id, None) and drawn.tag != "participant"
        ):
            continue  # another pool's contents: that process's own diagram
        if di.ns == BPMNDI and di.tag == "BPMNShape":
            shape = _shape(di, drawn)
            if shape is not None:
                shapes.append(shape)
        elif di.ns == BPMNDI and di.tag == "BPMNEdge":
            edges.append(_edge(di, drawn, found))
    return Diagram(process_id, tuple(shapes), tuple(edges))


def _semantic(el: XmlElement, process: str | None) -> Iterator[tuple[XmlElement, str | None]]:
    for child in el.children:
        if child.ns != BPMN:
            continue
        inner = child.attrib.get("id") if child.tag == "process" else process
        yield child, inner
        yield from _semantic(child, inner)


def _plane_of(
    root: XmlElement,
    process_id: str,
    found: dict[str, XmlElement],
    owner: dict[str, str | None],
) -> XmlElement | None:
    """The plane drawing the process itself, or a collaboration with a pool for it; else the
    first plane drawing any of its elements (a plane naming a process id the file no longer
    has, as files renamed by hand do)."""
    planes = [
        plane
        for diagram in root.children
        if diagram.ns == BPMNDI and diagram.tag == "BPMNDiagram"
        for plane in diagram.children
        if plane.ns == BPMNDI and plane.tag == "BPMNPlane"
    ]
    for plane in planes:
        ref = found.get(plane.attrib.get("bpmnElement", ""))
        if ref is None:
            continue
        if ref.tag == "process" and ref.attrib.get("id") == process_id:
            return plane
        if ref.tag == "collaboration" and any(
            p.tag == "participant" and p.attrib.get("processRef") == process_id
            for p in ref.children
        ):
            return plane
    for plane in planes:
        if any(owner.get(di.attrib.get("bpmnElement", "")) == process_id for di in plane.children):
            return plane
    return None


def _bounds(el: XmlElement | None) -> Bounds | None:
    box = el.find(DC, "Bounds") if el is not None else None
    if box is None:
        return None
    values = [_number(box.attrib.get(k, "0")) for k in ("x", "y", "width", "height")]
    if any(v is None for v in values):
        return None
    x, y, w, h = (float(v or 0) for v in values)
    return Bounds(x, y, w, h)


def _number(text: str) -> float | None:
    """A coordinate; ``None`` for text that is not a finite number (no ``nan`` in an SVG)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _true(el: XmlElement, name: str, default: bool) -> bool:
    value = el.attrib.get(name)
    return default if value is None else value.strip().lower() == "true"


def _shape(di: XmlElement, el: XmlElement) -> DiShape | None:
    bounds = _bounds(di)
    element = _element(el)
    if bounds is None or element is None:
        return None
    expanded = _true(di, "isExpanded", element.shape is Shape.SUBPROCESS)
    if element.shape is Shape.SUBPROCESS and "isExpanded" not in di.attrib:
        expanded = bounds.w > 150 or bounds.h > 120  # a modeler leaves it out when it is
    label = _bounds(di.find(BPMNDI, "BPMNLabel"))
    return DiShape(element, bounds, expanded, _true(di, "isHorizontal", True), label)


def _edge(di: XmlElement, el: XmlElement, found: dict[str, XmlElement]) -> DiEdge:
    points: list[tuple[float, float]] = []
    for wp in di.children:
        if wp.tag == "waypoint" and wp.ns in (DI, DC, ""):
            x, y = _number(wp.attrib.get("x", "")), _number(wp.attrib.get("y", ""))
            if x is not None and y is not None:
                points.append((x, y))
    label = _bounds(di.find(BPMNDI, "BPMNLabel"))
    ident, name = str(el.attrib.get("id")), el.attrib.get("name", "")
    source = found.get(el.attrib.get("sourceRef", ""))
    default = source is not None and source.attrib.get("default") == ident
    conditional = (
        source is not None
        and _family(source.tag) in (Shape.TASK, Shape.SUBPROCESS)
        and el.find(BPMN, "conditionExpression") is not None
    )
    return DiEdge(ident, el.tag, name, tuple(points), label, default, conditional)


def _family(tag: str) -> Shape | None:
    if tag in _EVENTS:
        return Shape.EVENT
    if tag in _GATEWAYS:
        return Shape.GATEWAY
    if tag in _TASKS:
        return Shape.TASK
    if tag in _SUBPROCESSES:
        return Shape.SUBPROCESS
    return _OTHERS.get(tag)


def _element(el: XmlElement) -> Element | None:
    family = _family(el.tag)
    if family is None:
        return None
    name = el.attrib.get("name", "")
    if family is Shape.ANNOTATION:
        text = el.find(BPMN, "text")
        name = text.text if text is not None else ""
    interrupting = _true(el, "cancelActivity", True) and _true(el, "isInterrupting", True)
    return Element(
        id=str(el.attrib.get("id")),
        tag=el.tag,
        shape=family,
        name=name,
        trigger=_trigger(el),
        throwing=el.tag in _THROWING,
        interrupting=interrupting,
        loop=_loop(el),
        for_compensation=_true(el, "isForCompensation", False),
        triggered_by_event=_true(el, "triggeredByEvent", False),
        attached_to=el.attrib.get("attachedToRef"),
    )


def _trigger(el: XmlElement) -> Trigger | None:
    kinds = [_TRIGGERS[c.tag] for c in el.children if c.ns == BPMN and c.tag in _TRIGGERS]
    if len(kinds) > 1:
        return (
            Trigger.PARALLEL_MULTIPLE if _true(el, "parallelMultiple", False) else Trigger.MULTIPLE
        )
    return kinds[0] if kinds else None


def _loop(el: XmlElement) -> Loop | None:
    for c in el.children:
        if c.ns == BPMN and c.tag == "multiInstanceLoopCharacteristics":
            return Loop.SEQUENTIAL if _true(c, "isSequential", False) else Loop.PARALLEL
        if c.ns == BPMN and c.tag == "standardLoopCharacteristics":
            return Loop.STANDARD
    return None
