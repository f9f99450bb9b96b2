"""A BPMN ``callActivity`` with Camunda 7's attributes and ``camunda:in``/``camunda:out``,
read into the definition document's ``callActivity`` node (``bpm.definitions.calls``).

What bpm cannot honour is refused by name: tenants (bpm has none) and CMMN cases. A mapping
class or delegate expression names the handler that maps variables across the call.
"""

from __future__ import annotations

import re
from typing import Any

from bpm.definitions.bpmn_handlers import handler_name
from bpm.definitions.bpmn_names import CAMUNDA
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.bpmn_xml import XmlElement
from bpm.definitions.model import CallBinding

Mapped = dict[str, Any]

_BINDINGS = tuple(b.value for b in CallBinding)
#: The caller's business key, as Camunda models pass it on.
_CALLER_KEY = re.compile(r"^\s*[$#]\{\s*execution\.(processBusinessKey|businessKey)\s*\}\s*$")
#: The caller's own tenant: an instance here has none, so naming it is naming no tenant,
#: and the definition resolves as without the attribute (as Camunda 7 resolves it for an
#: instance that has no tenant).
OWN_TENANT = re.compile(r"^\s*[$#]\{\s*execution\.(tenantId|getTenantId\(\))\s*\}\s*$")
_REFUSED = {
    "calledElementTenantId": "bpm has no tenants; leave calledElementTenantId out",
    "caseRef": "call activities start processes only; CMMN cases are not supported",
    "caseBinding": "call activities start processes only; CMMN cases are not supported",
}
#: Camunda's variable mapping, by class or bean: a registered handler of that name maps.
_MAPPING = ("variableMappingClass", "variableMappingDelegateExpression")


def call_activity(r: Reader) -> Mapped:
    for attr, instead in _REFUSED.items():
        value = r.attr(attr, CAMUNDA)
        if value is not None and not (attr.endswith("TenantId") and OWN_TENANT.match(value)):
            raise reject(r.el, f"has camunda:{attr}", instead)
    called = r.attr("calledElement")
    if called is None or not called.strip():
        raise reject(r.el, "has no calledElement", "name the key of the process it calls")
    node: Mapped = {"type": "callActivity", "process": _expression(called.strip())}
    given = [(a, v) for a in _MAPPING if (v := r.attr(a, CAMUNDA)) is not None and v.strip()]
    if len(given) > 1:
        raise reject(r.el, "has both camunda:variableMappingClass and a delegate expression")
    if given:
        node["mapping"] = handler_name(given[0][1])
    binding = r.attr("calledElementBinding", CAMUNDA) or "latest"
    if binding not in _BINDINGS:
        raise reject(
            r.el,
            f"has camunda:calledElementBinding={binding!r}",
            "use latest, version, versionTag or deployment",
        )
    node["binding"] = binding
    version = r.attr("calledElementVersion", CAMUNDA)
    tag = r.attr("calledElementVersionTag", CAMUNDA)
    if binding == "version":
        if version is None or not version.strip():
            raise reject(r.el, "binds to a version without camunda:calledElementVersion")
        node["version"] = _expression(version.strip())
    if binding == "versionTag":
        if tag is None or not tag.strip():
            raise reject(r.el, "binds to a version tag without camunda:calledElementVersionTag")
        node["versionTag"] = tag.strip()
    inputs = [_mapping(el, incoming=True, node=node) for el in r.extensions("in", CAMUNDA)]
    outputs = [_mapping(el, incoming=False, node=node) for el in r.extensions("out", CAMUNDA)]
    if inputs := [m for m in inputs if m]:
        node["in"] = inputs
    if outputs := [m for m in outputs if m]:
        node["out"] = outputs
    return node


def in_mapping(el: XmlElement) -> Mapped:
    """A ``camunda:in`` that passes variables (a signal throw's): one that sets a business
    key is refused naming it."""
    found = _mapping(el, incoming=True, node={})
    if found is None:
        raise reject(el, "sets a business key, which a signal does not carry", "remove it")
    return found


def _mapping(el: XmlElement, *, incoming: bool, node: Mapped) -> Mapped | None:
    """One ``camunda:in``/``camunda:out``; None for the ``in`` that only sets the business
    key (it is put on ``node``)."""
    m = Reader(el)
    key = m.attr("businessKey") if incoming else None
    every = m.attr("variables")
    source, expression, target = m.attr("source"), m.attr("sourceExpression"), m.attr("target")
    local = m.attr("local")
    m.finish()
    if local not in (None, "true", "false"):
        raise reject(el, f"has local={local!r}", "use true or false")
    out: Mapped = {"local": True} if local == "true" else {}
    if key is not None:
        if every is not None or source is not None or expression is not None:
            raise reject(el, "sets the business key and variables at once", "use two camunda:in")
        if _CALLER_KEY.match(key):
            node["inheritBusinessKey"] = True
        else:
            node["businessKey"] = _expression(key)
        return None
    if every is not None:
        if every != "all":
            raise reject(el, f"has variables={every!r}", 'use variables="all"')
        if source is not None or expression is not None or target is not None:
            raise reject(el, 'has variables="all" with a source or target', "use two elements")
        return {"all": True, **out}
    if target is None:
        raise reject(el, "has no target", "name the variable it sets")
    if (source is None) == (expression is None):
        raise reject(el, "needs a source or a sourceExpression (one of them)")
    if source is not None:
        return {"source": source, "target": target, **out}
    return {"expression": _expression(str(expression)), "target": target, **out}


def _expression(text: str) -> str:
    """Camunda's deferred ``#{...}`` reads as ``${...}`` here (a model runs no code)."""
    return "${" + text.strip()[2:] if text.strip().startswith("#{") else text
