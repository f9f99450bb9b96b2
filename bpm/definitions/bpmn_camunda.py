"""Camunda 7 extensions any activity may carry: properties, documentation, retry cycles,
priorities, input/output mappings and field injection.

Each reader consumes its extension from the element's ``Reader`` and returns the definition
document keys it maps to; what it cannot map is refused, naming the extension and its owner.
"""

from __future__ import annotations

import re
from typing import Any

from bpm.definitions.bpmn_names import BPM, BPMN, CAMUNDA, FOX
from bpm.definitions.bpmn_reader import Reader, name, reject
from bpm.definitions.bpmn_xml import XmlElement
from bpm.definitions.code import inline_script
from bpm.definitions.durations import parse_duration
from bpm.errors import InvalidDefinition
from bpm.script_values import SCRIPT_KEY

Mapped = dict[str, Any]
#: ``R3/PT5M``: three runs in all, five minutes apart.
_REPEAT = re.compile(r"R(\d+)/(P.+)")
_DIGITS = re.compile(r"-?[0-9]{1,9}")
_WHOLE = re.compile(r"[0-9]{1,4}")
#: JUEL's deferred form reads like the immediate one here: both are evaluated once.
_DEFERRED = re.compile(r"#\{")


def documentation(el: XmlElement) -> str | None:
    """The text of the element's ``documentation`` children, joined."""
    texts = [c.text.strip() for c in el.children if c.ns == BPMN and c.tag == "documentation"]
    joined = "\n\n".join(t for t in texts if t)
    return joined or None


def properties(r: Reader) -> Mapped:
    """``camunda:properties``: name/value pairs with no behaviour of their own, kept for the
    API (external tasks can fetch them) and ``bpm definition``."""
    found = r.extensions("properties", CAMUNDA)
    if not found:
        return {}
    values: dict[str, str | list[str]] = {}
    for group in found:
        reader = Reader(group)
        for prop in reader.children("property", CAMUNDA):
            pr = Reader(prop)
            key, value = pr.attr("name"), pr.attr("value")
            pr.attr("id")
            pr.finish()
            if not key:
                raise reject(prop, "has no name", 'give each camunda:property a name="..."')
            values[key] = _added(values.get(key), value or "")
        reader.finish()
    return {"properties": values}


def _added(before: str | list[str] | None, value: str) -> str | list[str]:
    """A name given once holds its text; given again, the list of its texts in order (as
    Camunda keeps them all)."""
    if before is None:
        return value
    return [*before, value] if isinstance(before, list) else [before, value]


def retry(r: Reader, *, has_runs: bool) -> Mapped:
    """The retry policy of a task that runs code: Camunda's ``failedJobRetryTimeCycle`` (or
    fox's), or this project's ``bpm:retry``, ``bpm:backoff`` and ``bpm:timeout``. On a node
    that runs no code a cycle is checked and has nothing to govern (Camunda applies it to the
    node's asynchronous continuation, which is not a separate job here)."""
    cycles = [*r.extensions("failedJobRetryTimeCycle", CAMUNDA)]
    cycles += r.extensions("failedJobRetryTimeCycle", FOX)
    if len(cycles) > 1:
        raise reject(cycles[1], f"appears more than once in {name(r.el)}", "keep one")
    policy: Mapped = {}
    if cycles:
        Reader(cycles[0]).finish()
        policy.update(retry_cycle(cycles[0]))
    if not has_runs:
        return {}
    attempts, backoff = r.attr("retry", BPM), r.attr("backoff", BPM)
    timeout = r.attr("timeout", BPM)
    if (attempts is not None or backoff is not None) and cycles:
        raise reject(
            r.el, "has both bpm:retry or bpm:backoff and failedJobRetryTimeCycle", "keep one"
        )
    if attempts is not None:
        if not _WHOLE.fullmatch(attempts.strip()) or not 1 <= int(attempts) <= 1000:
            raise reject(r.el, f"has bpm:retry={attempts!r}", "give the number of runs, 1 to 1000")
        policy["max_attempts"] = int(attempts)
    if backoff is not None:
        policy["backoff"] = backoff.strip()
    out: Mapped = {"retry": policy} if policy else {}
    if timeout is not None:
        out["timeout"] = timeout.strip()
    return out


def retry_cycle(el: XmlElement) -> Mapped:
    """Camunda's cycle: ``R3/PT5M`` is three runs five minutes apart; a list
    ``PT1M,PT5M,PT1H`` is one run more than it has intervals, waiting each in turn (the last
    one again if need be); an expression is refused (it would run code)."""
    text = el.text.strip()
    if not text:
        raise reject(el, "is empty", "write R3/PT5M or PT1M,PT5M")
    if "${" in text or "#{" in text:
        raise reject(el, f"is the expression {text!r}", "write the cycle itself, such as R3/PT5M")
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1 and (repeat := _REPEAT.fullmatch(parts[0])):
        runs = int(repeat[1])
        if not 1 <= runs <= 1000:
            raise reject(el, f"repeats {runs} times", "give 1 to 1000 runs")
        return {"max_attempts": runs, "delays": _durations(el, [repeat[2]])}
    if any(not p or p.startswith("R") for p in parts) or len(parts) > 999:
        raise reject(el, f"is not a retry cycle: {text!r}", "write R3/PT5M or PT1M,PT5M")
    return {"max_attempts": len(parts) + 1, "delays": _durations(el, parts)}


def _durations(el: XmlElement, parts: list[str]) -> list[str]:
    """Each interval a fixed-length ISO 8601 duration (checked here, where the node that
    runs no code would not check it later)."""
    for part in parts:
        try:
            parse_duration(part, where="the interval", element=None)
        except InvalidDefinition as exc:
            raise reject(el, f"has {exc}", "write intervals such as PT5M") from None
    return parts


def priority(r: Reader) -> Mapped:
    """``camunda:taskPriority`` (external tasks) or ``camunda:jobPriority``: the task's
    priority, a whole number; an expression is refused."""
    found = [
        (attr, value)
        for attr in ("taskPriority", "jobPriority")
        if (value := r.attr(attr, CAMUNDA)) is not None
    ]
    if (bpm_priority := r.attr("priority", BPM)) is not None:
        found.append(("bpm:priority", bpm_priority))
    if not found:
        return {}
    attr, value = found[0]
    if not _DIGITS.fullmatch(value.strip()):
        raise reject(
            r.el,
            f"has the priority {value!r} ({attr})",
            "write a whole number; priority expressions are not supported yet",
        )
    return {"priority": int(value.strip())}


def input_output(r: Reader, *, direct: bool = False) -> Mapped:
    """``camunda:inputOutput``: input parameters become the node's ``inputs`` (local
    variables), output parameters its ``outputs``. ``direct``: a child of the element itself
    (as in a connector), not of its ``extensionElements``."""
    found = r.child("inputOutput", CAMUNDA) if direct else r.extension("inputOutput", CAMUNDA)
    if found is None:
        return {}
    reader = Reader(found)
    out: Mapped = {}
    for kind, key in (("inputParameter", "inputs"), ("outputParameter", "outputs")):
        params: Mapped = {}
        for param in reader.children(kind, CAMUNDA):
            pr = Reader(param)
            param_name = pr.attr("name")
            if not param_name:
                raise reject(param, "has no name", 'give it name="..."')
            params[param_name] = value_of(param, pr)
            pr.finish()
        if params:
            out[key] = params
    reader.finish()
    return out


def _script_value(el: XmlElement) -> Any:
    """An inline JavaScript (or JUEL) ``camunda:script`` value, evaluated as an expression;
    None for another language or a script resource (refused)."""
    sr = Reader(el)
    fmt, resource = sr.attr("scriptFormat") or "", sr.attr("resource")
    sr.finish()
    found = None if resource else inline_script(fmt, el.text)
    if found is None:
        return None
    return {SCRIPT_KEY: found["script"]} if "script" in found else found["expression"]


def value_of(el: XmlElement, reader: Reader) -> Any:
    """A parameter's value: text (``${...}`` an expression), ``camunda:list``,
    ``camunda:map``, or nothing (null). A ``camunda:script`` value is refused: scripts never
    run here."""
    kids = [c for c in el.children if c.ns == CAMUNDA]
    if not kids:
        return text_value(el, el.text)
    if len(kids) > 1:
        raise reject(kids[1], f"is a second value of {name(el)}", "give one value")
    kid = kids[0]
    reader.used_children.add(id(kid))
    if kid.tag == "script":
        script = _script_value(kid)
        if script is not None:
            return script
        fmt = (kid.attrib.get("scriptFormat") or "").strip() or "unnamed-language"
        resource = kid.attrib.get("resource")
        what = f"the {fmt} script resource {resource!r}" if resource else f"an inline {fmt} script"
        raise reject(
            el,
            f"has a camunda:script value, {what}, which bpm never runs (only inline JavaScript "
            f"and JUEL scripts run)",
            "write the value as ${...} or compute it in a handler",
        )
    if kid.tag == "list":
        lr = Reader(kid)
        items = []
        for item in kid.children:  # in document order: a list keeps its order
            if item.ns == CAMUNDA and item.tag == "value":
                lr.used_children.add(id(item))
                items.append(value_of(item, Reader(item)))
            elif item.ns == CAMUNDA and item.tag in ("list", "map"):
                lr.used_children.add(id(item))
                [wrapped] = _wrapped([item])
                items.append(value_of(wrapped, Reader(wrapped)))
        lr.finish()
        return items
    if kid.tag == "map":
        mr = Reader(kid)
        entries: Mapped = {}
        for entry in mr.children("entry", CAMUNDA):
            er = Reader(entry)
            key = er.attr("key")
            if key is None:
                raise reject(entry, "has no key", 'give it key="..."')
            entries[key] = value_of(entry, er)
            er.finish()
        mr.finish()
        return entries
    raise reject(kid, "is not a parameter value", "use text, camunda:list or camunda:map")


def _wrapped(nested: list[XmlElement]) -> list[XmlElement]:
    """A list written directly inside a list: read it as a value holding that list."""
    return [XmlElement(n.ns, "value", {}, n.line, [n], "", n.parent) for n in nested]


def text_value(el: XmlElement, text: str) -> Any:
    """Text as a mapping value: ``${...}`` alone is an expression, text around ``${...}``
    parts a composite (``Dear ${name}``), empty text null."""
    value = _DEFERRED.sub("${", text.strip())
    return value or None


def fields(r: Reader) -> Mapped:
    """``camunda:field``: configuration the handler reads as ``ctx.fields``; a string value
    is text, an expression is evaluated over the variables when the handler runs."""
    values = named_fields(r.extensions("field", CAMUNDA))
    return {"fields": values} if values else {}


def named_fields(found: list[XmlElement]) -> Mapped:
    """Field elements as name -> value; a modeler's empty row (no name, no value) is none."""
    values: Mapped = {}
    for field in found:
        fr = Reader(field)
        field_name = fr.attr("name")
        if not field_name and _blank(field):
            continue  # the modeler's empty row: no name, no value, nothing to give
        if not field_name:
            raise reject(field, "has no name", 'give it name="..."')
        if field_name in values:
            raise reject(field, f"repeats the field {field_name!r}", "give each a distinct name")
        values[field_name] = _field_value(field, fr)
        fr.finish()
    return values


def _blank(field: XmlElement) -> bool:
    return not any(v.strip() for v in field.attrib.values()) and all(
        not c.text.strip() and not c.children for c in field.children
    )


def _field_value(field: XmlElement, fr: Reader) -> Any:
    """A field's value as a mapping value: text, or one ``${...}`` expression."""
    given = [
        (kind, value)
        for kind in ("stringValue", "expression")
        if (value := fr.attr(kind)) is not None
    ]
    for kind in ("string", "expression"):
        child = fr.child(kind, CAMUNDA)
        if child is not None:
            Reader(child).finish()
            given.append((kind, child.text))
    if (script := fr.child("script", CAMUNDA)) is not None:
        raise reject(
            script,
            f"is a {script.attrib.get('scriptFormat') or 'script'} script as a field's value, "
            "which Camunda 7 does not inject and bpm never runs",
            "give the field a camunda:string or a camunda:expression",
        )
    if len(given) != 1:
        raise reject(
            field,
            "needs exactly one value (stringValue, expression, camunda:string or "
            "camunda:expression)",
        )
    kind, value = given[0]
    if kind in ("stringValue", "string") and ("${" in value or "#{" in value):
        raise reject(
            field,
            f"has the string {value!r}, which reads like an expression",
            "write it as camunda:expression, or leave ${ out of the text",
        )
    return text_value(field, value)
