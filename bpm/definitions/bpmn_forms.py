"""Forms of Camunda 7 user tasks and start events: ``camunda:formKey``, ``camunda:formRef``
(with its binding and version) and ``camunda:formData``, as the definition's ``form``.

The shape of a field (which rules fit its type, its date pattern) is the validator's to
check (``bpm.definitions.forms``); refused here is what has no equivalent at all: a
constraint the engine does not know, a custom validator (it would run Java code), legacy
``camunda:formProperty`` elements.
"""

from __future__ import annotations

import re
from typing import Any

from bpm.definitions.bpmn_names import CAMUNDA
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.forms import FLAGS, LENGTHS, Rule

Mapped = dict[str, Any]
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def form(r: Reader) -> Mapped:
    """The ``form`` key of a user task or start event, or nothing when it declares none."""
    out: Mapped = {}
    key = r.attr("formKey", CAMUNDA)
    ref = r.attr("formRef", CAMUNDA)
    binding = r.attr("formRefBinding", CAMUNDA)
    version = r.attr("formRefVersion", CAMUNDA)
    if key is not None and ref is not None:
        raise reject(r.el, "has both camunda:formKey and camunda:formRef", "give one")
    if key is not None and key.strip():
        out["key"] = key.strip()
    if ref is not None and ref.strip():
        out["ref"] = _ref(r, ref.strip(), binding, version)
    # Without a formRef, a binding or version binds nothing: Camunda Modeler leaves them
    # behind when a form reference is switched to a form key, and Camunda 7 ignores them.
    data = r.extension("formData", CAMUNDA)
    if data is not None:
        dr = Reader(data)
        out["fields"] = [_field(f) for f in dr.children("formField", CAMUNDA)]
        business_key = dr.attr("businessKey")
        if business_key is not None and business_key.strip():
            out["businessKey"] = business_key.strip()
        dr.finish()
    return {"form": out} if out else {}


def _ref(r: Reader, ref: str, binding: str | None, version: str | None) -> Mapped:
    out: Mapped = {"id": ref, "binding": binding or "latest"}
    if binding not in (None, "latest", "deployment", "version"):
        raise reject(
            r.el, f"has camunda:formRefBinding={binding!r}", "use latest, deployment or version"
        )
    if binding == "version":
        if version is None or not re.fullmatch(r"[0-9]{1,9}", version.strip()):
            raise reject(r.el, "binds its form to a version without a whole camunda:formRefVersion")
        out["version"] = int(version)
    elif version is not None:
        raise reject(r.el, 'has camunda:formRefVersion without camunda:formRefBinding="version"')
    return out


def _field(el: Any) -> Mapped:
    fr = Reader(el)
    out: Mapped = {"id": fr.attr("id") or ""}
    for attr in ("label", "type", "datePattern"):
        if (value := fr.attr(attr)) is not None:
            out[attr] = value
    default = fr.attr("defaultValue")
    if default is not None:
        out["defaultValue"] = default.replace("#{", "${")
    values = [_enum_value(v) for v in fr.children("value", CAMUNDA)]
    if values:
        out["values"] = values
    props = fr.child("properties", CAMUNDA)
    if props is not None:
        out["properties"] = _properties(props)
    validation = fr.child("validation", CAMUNDA)
    if validation is not None:
        out["validation"] = _validation(validation)
    fr.finish()
    return out


def _enum_value(el: Any) -> Mapped:
    vr = Reader(el)
    value_id, value_name = vr.attr("id"), vr.attr("name")
    vr.finish()
    if not value_id:
        raise reject(el, "has no id", 'give each camunda:value an id="..."')
    return {"id": value_id, "name": value_name or value_id}


def _properties(el: Any) -> dict[str, str]:
    """A field's properties: ``camunda:property id value`` (``name`` read as ``id``)."""
    pr = Reader(el)
    values: dict[str, str] = {}
    for prop in pr.children("property", CAMUNDA):
        one = Reader(prop)
        key = one.attr("id") or one.attr("name")
        value = one.attr("value")
        one.finish()
        if not key:
            raise reject(prop, "has no id", 'give each camunda:property an id="..."')
        values[key] = value or ""
    pr.finish()
    return values


def _validation(el: Any) -> Mapped:
    vr = Reader(el)
    rules: Mapped = {}
    for constraint in vr.children("constraint", CAMUNDA):
        cr = Reader(constraint)
        name, config = cr.attr("name") or "", cr.attr("config")
        cr.finish()
        if name == "validator":
            raise reject(
                constraint,
                f"names the custom validator {config!r}, which would run code bpm never runs",
                "use required, readonly, minlength, maxlength, min or max",
            )
        try:
            rule = Rule(name)
        except ValueError:
            known = ", ".join(r.value for r in Rule)
            raise reject(
                constraint, f"has the unknown constraint {name!r}", f"use {known}"
            ) from None
        if rule in rules:
            raise reject(constraint, f"repeats the constraint {name!r}", "keep one")
        rules[rule.value] = _config(constraint, rule, config)
    vr.finish()
    return rules


def _config(el: Any, rule: Rule, config: str | None) -> Any:
    if rule in FLAGS:
        return True
    text = (config or "").strip()
    if not _NUMBER.fullmatch(text) or (rule in LENGTHS and "." in text):
        wanted = "a whole number" if rule in LENGTHS else "a number"
        raise reject(el, f"{rule.value} has config={config!r}", f"give {wanted}")
    return float(text) if "." in text else int(text)
