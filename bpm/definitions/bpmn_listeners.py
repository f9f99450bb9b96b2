"""Camunda 7 listeners on a BPMN element: ``camunda:executionListener`` and
``camunda:taskListener`` (a class, an expression, a delegate expression or a script mapped
to a registered handler, with its fields and a timeout's timer), read into the definition
document's ``listeners``."""

from __future__ import annotations

from functools import partial
from typing import Any

from bpm.definitions.bpmn_camunda import named_fields
from bpm.definitions.bpmn_handlers import handler_name, script_stem
from bpm.definitions.bpmn_names import CAMUNDA
from bpm.definitions.bpmn_reader import Gathered, Reader, ignore, reject
from bpm.definitions.bpmn_timers import timer
from bpm.definitions.bpmn_xml import XmlElement
from bpm.definitions.code import inline_script

Mapped = dict[str, Any]


#: Listener events bpm runs, by the listener element; the others are refused, saying why.
_EXECUTION_EVENTS = frozenset({"start", "end"})
_TASK_EVENTS = frozenset({"create", "assignment", "complete", "delete", "update", "timeout"})
_LATER: dict[str, str] = {}


def listeners(r: Reader, *, task_listeners: bool, on_flow: bool = False) -> Mapped:
    """``camunda:executionListener`` (and, on a user task, ``camunda:taskListener``): each
    a handler run as a step of its own at its event; a modeler-left empty one runs nothing.
    On a sequence flow the event is ``take``."""
    found = [*r.extensions("executionListener", CAMUNDA)]
    if task_listeners:
        found += r.extensions("taskListener", CAMUNDA)
    else:  # Camunda 7 reads task listeners on user tasks only, and so passes over these
        for el in r.extensions("taskListener", CAMUNDA):
            ignore(el, "is a task listener outside a user task, which Camunda 7 never runs")
    gathered = Gathered()
    read: list[Mapped | None] = []
    for el in found:
        if not _empty_listener(el):
            read.append(gathered.attempt(partial(_listener, el, on_flow), None))
    gathered.check(_owner(r))
    out = [listener for listener in read if listener is not None]
    return {"listeners": out} if out else {}


def _owner(r: Reader) -> str | None:
    return r.el.attrib.get("id")


def _empty_listener(el: XmlElement) -> bool:
    code = ("class", "expression", "delegateExpression")
    return (
        not el.children
        and all(not el.attrib.get(a, "").strip() for a in code)
        and set(el.attrib) <= {*code, "event", "id"}
    )


def _listener(el: XmlElement, on_flow: bool = False) -> Mapped:
    reader = Reader(el)
    event = (reader.attr("event") or ("take" if on_flow else "")).strip()
    reader.attr("id")
    allowed = (
        frozenset({"take"})
        if on_flow
        else _TASK_EVENTS
        if el.tag == "taskListener"
        else _EXECUTION_EVENTS
    )
    if event in _LATER:
        raise reject(el, f"listens to {event!r}, which is not supported yet", _LATER[event])
    if event not in allowed:
        raise reject(el, f"has event={event!r}", f"use one of {', '.join(sorted(allowed))}")
    given = [
        (attr, value)
        for attr in ("class", "expression", "delegateExpression")
        if (value := reader.attr(attr)) is not None and value.strip()
    ]
    script = reader.child("script", CAMUNDA)
    inline = None
    if script is not None:
        sr = Reader(script)
        fmt, resource = sr.attr("scriptFormat") or "script", sr.attr("resource")
        sr.finish()
        inline = None if resource else inline_script(fmt, script.text)
        if not resource and inline is None:
            raise reject(
                el,
                f"runs an inline {fmt} script, which bpm never runs",
                "give the script a camunda:resource and register a handler under its name",
            )
        given.append(("script", resource or ""))
    if len(given) != 1:
        raise reject(el, "needs exactly one of class, expression, delegateExpression or script")
    kind, value = given[0]
    listener: Mapped = {"event": event}
    if inline is not None:
        listener.update(inline)
    elif kind == "class":
        listener["handler"] = value.strip().rsplit(".", 1)[-1]
    elif kind == "script":
        listener["handler"] = handler_name(script_stem(value) or value)
    else:  # an expression or a bean, evaluated: never a handler's name
        listener[kind] = value.strip()
    field_values = named_fields(reader.children("field", CAMUNDA))
    if field_values:
        listener["fields"] = field_values
    definition = reader.child("timerEventDefinition")
    if definition is None and event == "timeout":
        raise reject(
            el,
            "listens to 'timeout' but holds no timerEventDefinition",
            "add one with a timeDuration or timeDate",
        )
    if definition is not None and event != "timeout":
        raise reject(definition, f"is in a {event!r} listener", "only a timeout listener has one")
    if definition is not None:
        listener["timer"] = timer(definition, el)
    reader.finish()
    return listener
