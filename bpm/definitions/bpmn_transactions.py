"""BPMN transactions: the ``transaction`` element's own attribute, and the cancel end and
cancel boundary events (``cancelEventDefinition``).

Apart from ``bpmn_events`` so that module's event definitions (``READ``) stay as they are:
an end or boundary event with a ``cancelEventDefinition`` is read here, every other one is
handed on unchanged. A transaction's body is read as a subprocess's (``bpmn._subprocess``);
where cancel events may be is checked on the definition (``bpm.definitions.transactions``).
"""

from __future__ import annotations

from typing import Any

from bpm.definitions import bpmn_events as events
from bpm.definitions.bpmn_declarations import Declarations
from bpm.definitions.bpmn_names import BPMN
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.bpmn_xml import XmlElement

Mapped = dict[str, Any]
#: The ``method`` of a transaction Camunda 7 runs (BPMN's default): compensate on cancel.
COMPENSATE = "##Compensate"


def transaction(r: Reader) -> Mapped:
    """A ``transaction``'s own key; its ``method`` must be the default."""
    method = r.attr("method")
    if method not in (None, COMPENSATE):
        raise reject(
            r.el,
            f"has method={method!r}; only {COMPENSATE!r} (the default) is supported",
            "remove the method attribute",
        )
    return {"transaction": True}


def end(decl: Declarations, r: Reader) -> Mapped:
    """An end event: a cancel end event here, any other in ``bpmn_events``."""
    if _cancel_definition(r) is None:
        return events.end(decl, r)
    return {"type": "endEvent", "cancel": True}


def boundary(decl: Declarations, r: Reader) -> Mapped:
    """A boundary event: a cancel boundary here (always interrupting), any other in
    ``bpmn_events``."""
    if _cancel_definition(r) is None:
        return events.boundary(decl, r)
    attached = r.attr("attachedToRef")
    if not attached:
        raise reject(r.el, "needs attachedToRef")
    if r.attr("cancelActivity") not in (None, "true"):
        raise reject(
            r.el,
            'is a cancel boundary with cancelActivity="false"; cancel boundaries always interrupt',
            'remove cancelActivity="false"',
        )
    return {"type": "boundaryEvent", "attachedTo": attached, "cancel": True}


def _cancel_definition(r: Reader) -> XmlElement | None:
    """The event's ``cancelEventDefinition`` when it is its only event definition (marked
    read); None otherwise (``bpmn_events`` reads, or refuses, the others)."""
    found = [c for c in r.el.children if c.ns == BPMN and c.tag.endswith("EventDefinition")]
    if len(found) != 1 or found[0].tag != "cancelEventDefinition":
        return None
    if r.attr("eventDefinitionRef") is not None:
        raise reject(r.el, "uses eventDefinitionRef, which is not supported yet")
    r.used_children.add(id(found[0]))
    Reader(found[0]).finish()
    return found[0]
