"""What every BPMN flow node and process carries besides its own mapping: documentation,
properties, listeners, default flows, retry cycles, priorities, fields and input/output
(``common``), a process's metadata, and data objects (accepted without behaviour).

Apart from ``bpmn_camunda`` (each extension's reader) and ``bpmn_listeners`` because it puts
them together, in the order the importer reads an element.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.bpmn_camunda import (
    documentation,
    fields,
    input_output,
    priority,
    properties,
    retry,
)
from bpm.definitions.bpmn_listeners import listeners
from bpm.definitions.bpmn_multi_instance import multi_instance
from bpm.definitions.bpmn_names import CAMUNDA
from bpm.definitions.bpmn_reader import Gathered, Reader, reject
from bpm.definitions.bpmn_xml import XmlElement

Mapped = dict[str, Any]

_ACTIVITY_TYPES = frozenset(
    {"serviceTask", "userTask", "receiveTask", "subProcess", "callActivity", "task", "manualTask"}
)
#: Node types (of the definition document) that may carry input and output mappings: the
#: activities, intermediate events and end events (``parse/keys.py`` MAPPED).
MAPPED_TYPES = _ACTIVITY_TYPES | {
    "endEvent",
    "timerEvent",
    "messageEvent",
    "signalEvent",
    "conditionalEvent",
    "signalThrow",
    "escalationThrow",
    "compensationThrow",
}
#: Node types whose ``default`` attribute names the flow taken when no condition holds.
DEFAULTED_TYPES = _ACTIVITY_TYPES | {"boundaryEvent"}
#: BPMN data flow inside an activity: Camunda 7 gives it no behaviour, and neither does bpm.
DATA_FLOW = ("dataInputAssociation", "dataOutputAssociation", "ioSpecification", "property")
#: Children of an activity or event for people and tools only: its data flow, and who
#: performs it (``performer``; Camunda 7 reads only ``humanPerformer`` and
#: ``potentialOwner``, on a user task).
METADATA = (*DATA_FLOW, "performer")


def common(r: Reader, node: Mapped) -> Mapped:
    """The extensions every flow node may carry, read after the element's own mapper. Each
    is read even when one before it is refused, and the refusals are raised together."""
    out: Mapped = {}
    gathered, none = Gathered(), Mapped()
    if (text := documentation(r.el)) is not None:
        out["documentation"] = text
    out.update(gathered.attempt(lambda: properties(r), none))
    for tag in METADATA:
        r.children(tag)
    kind = node.get("type")
    out.update(gathered.attempt(lambda: listeners(r, task_listeners=kind == "userTask"), none))
    if kind in DEFAULTED_TYPES and (default := r.attr("default")):
        out["default"] = default
    runs = kind == "serviceTask" and "decision" not in node
    out.update(gathered.attempt(lambda: retry(r, has_runs=runs), none))
    if runs:
        out.update(gathered.attempt(lambda: priority(r), none))
        out.update(gathered.attempt(lambda: _fields(r, node), none))
    if kind in MAPPED_TYPES:
        out.update(gathered.attempt(lambda: input_output(r), none))
    out.update(gathered.attempt(lambda: multi_instance(r, kind), none))
    gathered.check(node.get("id"))
    return out


def _fields(r: Reader, node: Mapped) -> Mapped:
    found = fields(r)
    if found and "topic" in node:
        raise reject(
            r.el,
            "has camunda:field on an external task, which its worker cannot read",
            "give the worker its configuration as camunda:properties or inputOutput",
        )
    return found


def process_metadata(r: Reader) -> Mapped:
    """What a process carries for people and tools: documentation, properties, version tag,
    the tasklist flag, and who may start it."""
    out: Mapped = {}
    if (text := documentation(r.el)) is not None:
        out["documentation"] = text
    out.update(properties(r))
    out.update(listeners(r, task_listeners=False))
    if (tag := r.attr("versionTag", CAMUNDA)) is not None and tag.strip():
        out["versionTag"] = tag.strip()
    startable = r.attr("isStartableInTasklist", CAMUNDA)
    if startable is not None:
        if startable not in ("true", "false"):
            raise reject(r.el, f"has camunda:isStartableInTasklist={startable!r}", "true or false")
        out["startableInTasklist"] = startable == "true"
    for attr, key in (
        ("candidateStarterGroups", "candidate_starter_groups"),
        ("candidateStarterUsers", "candidate_starter_users"),
    ):
        value = r.attr(attr, CAMUNDA)
        if value is None:
            continue
        if "${" in value or "#{" in value:
            raise reject(r.el, f"has the expression {value!r} as camunda:{attr}", "list names")
        names = [n.strip() for n in value.split(",") if n.strip()]
        if names:
            out[key] = names
    return out


DATA_OBJECTS = frozenset({"dataObject", "dataObjectReference", "dataStoreReference"})


def data_object(el: XmlElement) -> Mapped:
    """A data object, reference or data store reference: kept in the process's
    ``dataObjects`` for people (no behaviour, in Camunda 7 either)."""
    reader = Reader(el)
    out: Mapped = {"kind": el.tag, "id": el.attrib.get("id", "")}
    if el.attrib.get("name"):
        out["name"] = el.attrib["name"]
    for attr in ("dataObjectRef", "dataStoreRef", "itemSubjectRef"):
        if (value := reader.attr(attr)) is not None:
            out[attr] = value
    reader.attr("isCollection")
    state = reader.child("dataState")
    if state is not None:
        Reader(state).finish()
        if state.attrib.get("name"):
            out["state"] = state.attrib["name"]
    reader.finish()
    return out
