"""Events of a BPMN file: start, end, intermediate catch and throw, and boundary events."""

from __future__ import annotations

from typing import Any

from bpm.definitions import bpmn_forms, bpmn_signals
from bpm.definitions import bpmn_tasks as tasks
from bpm.definitions.bpmn_conditions import condition
from bpm.definitions.bpmn_declarations import Declarations, message
from bpm.definitions.bpmn_names import BPM, BPMN, CAMUNDA
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.bpmn_timers import timer
from bpm.definitions.bpmn_xml import XmlElement

Mapped = dict[str, Any]
#: Event definitions bpm reads; the others are refused as not supported yet.
READ = frozenset(
    {
        "terminateEventDefinition",
        "errorEventDefinition",
        "compensateEventDefinition",
        "timerEventDefinition",
        "messageEventDefinition",
        "linkEventDefinition",
        "escalationEventDefinition",
        "conditionalEventDefinition",
        "signalEventDefinition",
    }
)
#: The key a link event's node carries while its scope is read: ("throw" or "catch", name).
#: ``bpmn_links`` replaces it with the flow the link stands for.
LINK = "_link"


def event_definition(reader: Reader) -> XmlElement | None:
    """The single ``*EventDefinition`` child of an event, or None for a none event."""
    found = [c for c in reader.el.children if c.ns == BPMN and c.tag.endswith("EventDefinition")]
    if reader.attr("eventDefinitionRef") is not None:
        raise reject(reader.el, "uses eventDefinitionRef, which is not supported yet")
    if len(found) > 1:
        raise reject(
            reader.el,
            "has several event definitions (a multiple event), which is not supported yet",
            "draw one event per trigger",
        )
    if not found:
        return None
    reader.used_children.add(id(found[0]))
    if found[0].tag not in READ:
        raise reject(reader.el, f"with {found[0].tag} is not supported yet")
    return found[0]


def start(decl: Declarations, r: Reader) -> Mapped:
    node: Mapped = {"type": "startEvent"}
    initiator = r.attr("initiator", CAMUNDA)
    if initiator is not None and initiator.strip():
        node["initiator"] = initiator.strip()
    node.update(bpmn_forms.form(r))
    parent = r.el.parent
    if (
        parent is not None
        and parent.tag == "subProcess"
        and (parent.attrib.get("triggeredByEvent") == "true")
    ):
        node.update(_event_subprocess_start(decl, r))
        return node
    definition = event_definition(r)
    if definition is None:
        return node
    at_process = parent is not None and parent.tag == "process"
    if definition.tag == "messageEventDefinition" and at_process:
        node["message"] = message_of(decl, r.el, definition)
        return node
    if definition.tag == "timerEventDefinition" and at_process:
        return {**node, "timer": timer(definition, r.el)}
    if definition.tag == "conditionalEventDefinition" and at_process:
        return {**node, "condition": condition(r.el, definition)}
    if definition.tag == bpmn_signals.TAG and at_process:
        return {**node, "signal": bpmn_signals.name(decl, r.el, definition)}
    raise reject(
        r.el,
        f"has a {definition.tag}; of the start events of a process only none, message, "
        "timer, conditional and signal start events are supported yet",
        "start the instance with bpm start, or by a message",
    )


def _event_subprocess_start(decl: Declarations, r: Reader) -> Mapped:
    """The start event of an event subprocess: its trigger (error, message, timer) and
    ``isInterrupting``; the other triggers are refused naming the element."""
    interrupting = r.attr("isInterrupting")
    definition = event_definition(r)
    if interrupting not in (None, "true", "false"):
        raise reject(r.el, f"has isInterrupting={interrupting!r}", "use true or false")
    node: Mapped = {} if interrupting != "false" else {"interrupting": False}
    if definition is None:
        raise reject(
            r.el,
            "starts an event subprocess without an event definition",
            "give it an error, message or timer event definition",
        )
    if definition.tag == "errorEventDefinition":
        node["error"] = error_code(decl, r.el, definition, catch=True, into=node)
    elif definition.tag == "messageEventDefinition":
        node["message"] = message_of(decl, r.el, definition)
    elif definition.tag == "timerEventDefinition":
        node["timer"] = timer(definition, r.el)
    elif definition.tag == "conditionalEventDefinition":
        node["condition"] = condition(r.el, definition)
    elif definition.tag == "escalationEventDefinition":
        node["escalation"] = escalation_code(decl, r.el, definition, catch=True, into=node)
    elif definition.tag == bpmn_signals.TAG:
        node["signal"] = bpmn_signals.name(decl, r.el, definition)
    else:
        raise reject(
            r.el,
            f"starts an event subprocess with {definition.tag}, which is not supported yet",
            "use an error, message, timer, escalation or conditional start event",
        )
    return node


def end(decl: Declarations, r: Reader) -> Mapped:
    definition = event_definition(r)
    node: Mapped = {"type": "endEvent"}
    if definition is None:
        return node
    if definition.tag == "terminateEventDefinition":
        Reader(definition).finish()
        node["terminate"] = True
    elif definition.tag == "errorEventDefinition":
        node["error"] = error_code(decl, r.el, definition, catch=False, into=node)
    elif definition.tag == "compensateEventDefinition":
        node.update(compensate(definition))
    elif definition.tag == "messageEventDefinition":
        return message_throw(decl, r, definition, otherwise=node)
    elif definition.tag == "escalationEventDefinition":
        node["escalation"] = escalation_code(decl, r.el, definition, catch=False)
    elif definition.tag == bpmn_signals.TAG:
        node.update(bpmn_signals.thrown(decl, r, definition))
    else:
        raise reject(r.el, f"with {definition.tag} is not supported yet")
    return node


def compensate(definition: XmlElement) -> Mapped:
    reader = Reader(definition)
    node: Mapped = {"compensate": True}
    activity = reader.attr("activityRef")
    wait = reader.attr("waitForCompletion")
    reader.finish()
    if activity:
        node["activity"] = activity
    if wait not in (None, "true", "false"):
        raise reject(definition, f"has waitForCompletion={wait!r}", "use true or false")
    if wait == "false":
        node["waitForCompletion"] = False
    return node


def error_code(
    decl: Declarations,
    event: XmlElement,
    definition: XmlElement,
    *,
    catch: bool,
    into: Mapped | None = None,
) -> str:
    """The code an error event throws or catches; a catching one's
    ``camunda:errorCodeVariable`` and ``errorMessageVariable`` go into ``into``."""
    reader = Reader(definition)
    ref = reader.attr("errorRef")
    if catch and into is not None:
        for attr in ("errorCodeVariable", "errorMessageVariable"):
            if (name := reader.attr(attr, CAMUNDA)) is not None and name.strip():
                into[attr] = name.strip()
    reader.finish()
    declared = decl.errors.get(decl.resolve(ref, decl.errors)) if ref else None
    if not catch and into is not None and declared is not None and declared.message:
        into["errorMessage"] = declared.message
    if not ref:
        if catch:
            return "*"
        raise reject(event, "throws an error without errorRef", "declare an <error errorCode>")
    ref = decl.resolve(ref, decl.errors)
    if ref not in decl.errors:
        return ref  # as Camunda: an errorRef naming no <error> is the code itself
    code = decl.errors[ref].code
    if code is None or not code.strip():
        if catch:
            return "*"
        raise reject(event, f"throws error {ref!r}, which has no errorCode", "give it one")
    return code


def catch(decl: Declarations, r: Reader) -> Mapped:
    definition = event_definition(r)
    if definition is not None and definition.tag == "linkEventDefinition":
        return {"type": "task", LINK: ("catch", link_name(r.el, definition))}
    if definition is not None and definition.tag == "timerEventDefinition":
        return {"type": "timerEvent", **timer(definition, r.el)}
    if definition is not None and definition.tag == "messageEventDefinition":
        return {"type": "messageEvent", "message": message_of(decl, r.el, definition)}
    if definition is not None and definition.tag == "conditionalEventDefinition":
        return {"type": "conditionalEvent", "condition": condition(r.el, definition)}
    if definition is not None and definition.tag == bpmn_signals.TAG:
        return {"type": "signalEvent", "signal": bpmn_signals.name(decl, r.el, definition)}
    what = definition.tag if definition is not None else "no event definition"
    raise reject(
        r.el, f"with {what} is not supported yet", "catch a timer, message, signal or condition"
    )


def throw(decl: Declarations, r: Reader) -> Mapped:
    definition = event_definition(r)
    if definition is None:
        return {"type": "task"}  # a none throw event only marks a point of the path
    if definition.tag == "linkEventDefinition":
        return {"type": "task", LINK: ("throw", link_name(r.el, definition))}
    if definition.tag == "messageEventDefinition":
        return message_throw(decl, r, definition, otherwise={"type": "task"})
    if definition.tag == "escalationEventDefinition":
        return {
            "type": "escalationThrow",
            "escalation": escalation_code(decl, r.el, definition, catch=False),
        }
    if definition.tag == bpmn_signals.TAG:
        return {"type": "signalThrow", **bpmn_signals.thrown(decl, r, definition)}
    if definition.tag == "compensateEventDefinition":
        node: Mapped = {"type": "compensationThrow", **compensate(definition)}
        node.pop("compensate")
        return node
    raise reject(r.el, f"with {definition.tag} is not supported yet")


def boundary(decl: Declarations, r: Reader) -> Mapped:
    attached = r.attr("attachedToRef")
    cancel = r.attr("cancelActivity")
    definition = event_definition(r)
    if not attached:
        raise reject(r.el, "needs attachedToRef")
    node: Mapped = {"type": "boundaryEvent", "attachedTo": attached}
    tag = definition.tag if definition is not None else None
    if definition is not None and cancel == "false" and tag != "errorEventDefinition":
        node["interrupting"] = False
    if definition is not None and tag == "timerEventDefinition":
        node["timer"] = timer(definition, r.el)
    elif definition is not None and tag == "escalationEventDefinition":
        node["escalation"] = escalation_code(decl, r.el, definition, catch=True, into=node)
    elif definition is not None and tag == "conditionalEventDefinition":
        node["condition"] = condition(r.el, definition)
    elif definition is not None and tag == "messageEventDefinition":
        node["message"] = message_of(decl, r.el, definition)
    elif definition is not None and tag == bpmn_signals.TAG:
        node["signal"] = bpmn_signals.name(decl, r.el, definition)
    elif definition is not None and definition.tag == "errorEventDefinition":
        if cancel == "false":
            raise reject(
                r.el,
                'is an error boundary with cancelActivity="false"; error '
                "boundaries always interrupt",
                'remove cancelActivity="false"',
            )
        node["error"] = error_code(decl, r.el, definition, catch=True, into=node)
    else:
        what = definition.tag if definition is not None else "no event definition"
        raise reject(
            r.el,
            f"with {what} is not supported yet",
            "use a timer, error, message, signal, escalation, conditional or compensation boundary",
        )
    if cancel not in (None, "true", "false"):
        raise reject(r.el, f"has cancelActivity={cancel!r}", "use true or false")
    return node


def message_of(decl: Declarations, event: XmlElement, definition: XmlElement) -> str:
    """The message a ``messageEventDefinition`` names (declared, or refused)."""
    reader = Reader(definition)
    ref = reader.attr("messageRef")
    reader.finish()
    return message(decl, event, ref)


def link_name(el: XmlElement, definition: XmlElement) -> str:
    reader = Reader(definition)
    name = reader.attr("name")
    reader.finish()
    if not name or not name.strip():
        raise reject(el, "has a linkEventDefinition without a name", "name the link")
    return name.strip()


#: Attributes that give a message throw event the code that sends its message.
_SENDS = (
    ("class", CAMUNDA),
    ("expression", CAMUNDA),
    ("delegateExpression", CAMUNDA),
    ("type", CAMUNDA),
    ("handler", BPM),
    ("topic", BPM),
)


def message_throw(
    decl: Declarations, r: Reader, definition: XmlElement, *, otherwise: Mapped
) -> Mapped:
    """A message intermediate throw or end event sends its message as a service task does:
    its implementation (Camunda puts it on the ``messageEventDefinition``; on the event is
    read too) runs, then the path goes on (or ends, for an end event: a task with no outgoing
    flow ends its path). Without an implementation it sends nothing and is ``otherwise`` (a
    none event), as in Camunda 7."""
    dr = Reader(definition)
    ref = dr.attr("messageRef")
    if ref is not None:
        message(decl, r.el, ref)  # a message that is not declared is still refused
    for reader in (dr, r):
        if _sends(reader):
            node = tasks.service(decl, reader)
            if reader is dr:
                dr.finish()
            return node
    dr.finish()
    return otherwise


def _sends(reader: Reader) -> bool:
    if any(reader.el.attrib.get(f"{{{ns}}}{name}") is not None for name, ns in _SENDS):
        return True
    return reader.extension("connector", CAMUNDA) is not None


def escalation_code(
    decl: Declarations,
    event: XmlElement,
    definition: XmlElement,
    *,
    catch: bool,
    into: Mapped | None = None,
) -> str:
    """The code an escalation event throws, or catches (``*``: any, without a code); a
    catching one's ``camunda:escalationCodeVariable`` goes into ``into``."""
    reader = Reader(definition)
    ref = reader.attr("escalationRef")
    if catch and into is not None:
        name = reader.attr("escalationCodeVariable", CAMUNDA)
        if name is not None and name.strip():
            into["escalationCodeVariable"] = name.strip()
    reader.finish()
    if ref:
        ref = decl.resolve(ref, decl.escalations)
    code = decl.escalations.get(ref) if ref and ref in decl.escalations else ref
    if code is not None and code.strip():
        return code.strip()
    if catch:
        return "*"
    raise reject(
        event,
        "throws an escalation without a code",
        'declare <escalation id="..." escalationCode="..."/> and refer to it',
    )
