"""Compensation boundary events of a BPMN scope: each is an association from the boundary
on an activity to the handler activity that undoes it, read into the activity's
``compensation`` (the boundary and the association are not nodes or flows of their own)."""

from __future__ import annotations

from typing import Any

from bpm.definitions import bpmn_events as events
from bpm.definitions.bpmn_declarations import local_id
from bpm.definitions.bpmn_names import BPMN
from bpm.definitions.bpmn_reader import Reader, ignore, reject
from bpm.definitions.bpmn_xml import XmlElement

Mapped = dict[str, Any]


def attach_compensation(
    boundary: XmlElement,
    activity: str,
    associations: dict[str, XmlElement],
    by_id: dict[str, Mapped],
    for_compensation: set[str],
) -> str:
    """Give ``activity`` the handler its compensation boundary event is associated with;
    returns the handler's id. The handler must be an activity of the same scope marked
    ``isForCompensation``."""
    association = associations[boundary.attrib.get("id", "")]
    handler = local_id(association.attrib.get("targetRef", ""))
    target = by_id.get(activity)
    if target is None:
        raise reject(
            boundary, f"is attached to {activity!r}, which is not an activity of the same scope"
        )
    if handler not in by_id or handler not in for_compensation:
        raise reject(
            boundary,
            f"is associated with {handler!r}, which is not an activity "
            f'of the same scope marked isForCompensation="true"',
            "mark the handler activity",
        )
    if "compensation" in target:
        raise reject(boundary, f"is a second compensation boundary on {activity!r}", "keep one")
    target["compensation"] = {"node": handler}
    return handler


def is_compensation(el: XmlElement) -> bool:
    return any(c.ns == BPMN and c.tag == "compensateEventDefinition" for c in el.children)


def compensation_boundary(
    el: XmlElement,
    associations: dict[str, XmlElement],
    compensated: dict[str, XmlElement],
) -> None:
    """A compensation boundary event on ``attachedToRef``, noted in ``compensated`` for the
    association to its handler; Camunda 7 ignores (with a warning) ``waitForCompletion`` and
    ``activityRef`` on a catching compensation event, and so does the import (listing them)."""
    reader = Reader(el)
    attached = reader.attr("attachedToRef")
    reader.attr("cancelActivity")
    definition = events.event_definition(reader)
    reader.finish()
    if definition is not None:  # Camunda 7 warns of and ignores both on a catch
        dr = Reader(definition)
        for attr in ("waitForCompletion", "activityRef"):
            if (value := dr.attr(attr)) is not None:
                ignore(definition, f"has {attr}={value!r}, which a catching event ignores")
        dr.finish()
    if not attached:
        raise reject(el, "needs attachedToRef")
    if el.attrib.get("id", "") not in associations:
        raise reject(
            el,
            "is a compensation boundary without an association to its "
            'compensation handler (isForCompensation="true")',
            "draw the association",
        )
    if attached in compensated:
        raise reject(el, f"is a second compensation boundary on {attached!r}", "keep one")
    compensated[attached] = el
