"""Tasks of a BPMN file: service-like tasks and their implementations, user and receive tasks."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from bpm.definitions import bpmn_camunda as camunda
from bpm.definitions import bpmn_forms
from bpm.definitions.bpmn_calls import OWN_TENANT
from bpm.definitions.bpmn_declarations import Declarations, message
from bpm.definitions.bpmn_handlers import handler_name, script_stem
from bpm.definitions.bpmn_names import BPM, CAMUNDA, ZEEBE
from bpm.definitions.bpmn_reader import Reader, ignore, reject
from bpm.definitions.code import JAVASCRIPT, inline_script
from bpm.errors import InvalidExpression
from bpm.expressions import compile_expression
from bpm.scripts import SCRIPTS_SETTING, scripts_enabled

Mapped = dict[str, Any]
SERVICE_LIKE = frozenset({"serviceTask", "sendTask", "businessRuleTask"})
_EXPRESSION = re.compile(r"\$\{|#\{|^\s*=")
_IMPLEMENTATIONS = (
    'give bpm:handler, bpm:topic, camunda:type="external" with camunda:topic, '
    "zeebe:taskDefinition, camunda:class, camunda:expression or camunda:delegateExpression"
)


def service(decl: Declarations, r: Reader) -> Mapped:
    found: list[tuple[str, str, str]] = []  # (key, value, where from)
    camunda_type = r.attr("type", CAMUNDA)
    topic = r.attr("topic", CAMUNDA)
    if camunda_type is not None:
        if camunda_type != "external":
            raise reject(
                r.el,
                f"has camunda:type={camunda_type!r}; only 'external' is supported",
                'use camunda:type="external" with camunda:topic, or bpm:handler',
            )
        if not topic or not topic.strip():
            raise reject(r.el, 'has camunda:type="external" without camunda:topic', "add one")
        found.append(("topic", topic.strip(), "camunda:topic"))  # a topic has no edge spaces
    elif topic is not None:
        raise reject(r.el, 'has camunda:topic without camunda:type="external"', "add it")
    task_definition = r.extension("taskDefinition", ZEEBE)
    retries = None
    if task_definition is not None:
        zeebe = Reader(task_definition)
        kind = zeebe.attr("type")
        retries = zeebe.attr("retries")
        zeebe.finish()
        if not kind or kind.startswith("="):
            raise reject(r.el, "needs a literal zeebe:taskDefinition type (FEEL not supported)")
        found.append(("topic", kind, "zeebe:taskDefinition"))
    for attr, key in (("handler", "handler"), ("topic", "topic")):
        value = r.attr(attr, BPM)
        if value is not None:
            found.append((key, value, f"bpm:{attr}"))
    wired = connector(r)
    if wired is not None:
        found.append(("connector", wired["connector"], "camunda:connector"))
    java = r.attr("class", CAMUNDA)
    if java is not None:
        found.append(("handler", java.strip().rsplit(".", 1)[-1], "camunda:class"))
    for attr in ("expression", "delegateExpression"):
        value = r.attr(attr, CAMUNDA)
        if value is not None and value.strip():  # evaluated, never a handler's name; an
            found.append((attr, value.strip(), f"camunda:{attr}"))  # empty one is absent
    result_variable = r.attr("resultVariable", CAMUNDA)
    if not found and (alien := _foreign_implementation(r)):
        raise reject(
            r.el,
            f"has {alien}, in a namespace bpm does not know: Camunda 7's is "
            f"{CAMUNDA}, this project's {BPM}",
        )
    if not found:
        raise reject(r.el, "has no implementation", _IMPLEMENTATIONS)
    found = _camunda_precedence(r, found)
    if len(found) > 1:
        raise reject(
            r.el, f"has several implementations ({', '.join(f[2] for f in found)})", "give one"
        )
    node: Mapped = {"type": "serviceTask", found[0][0]: found[0][1]}
    if result_variable is not None and result_variable.strip():
        if "topic" in node:
            raise reject(
                r.el,
                "has camunda:resultVariable on an external task",
                "the worker completes the task with the variables it sets",
            )
        node["resultVariable"] = result_variable.strip()
    if retries is not None:
        if not re.fullmatch(r"[0-9]{1,4}", retries) or int(retries) < 1:
            raise reject(
                r.el, f"has zeebe:taskDefinition retries={retries!r}; expected a positive integer"
            )
        node["retry"] = {"max_attempts": int(retries)}
    return node


#: Camunda 7's choice among its own implementations of one task: its connect plugin sets a
#: connector's behaviour after the parser set the others (so a connector wins), and the
#: parser takes ``type`` (external), then ``class``, then ``delegateExpression``, then
#: ``expression``.
_CAMUNDA_ORDER = (
    "camunda:connector",
    "camunda:topic",
    "camunda:class",
    "camunda:delegateExpression",
    "camunda:expression",
)


def _camunda_precedence(r: Reader, found: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Of several Camunda implementations, the one Camunda 7 runs; the others are listed as
    ignored. bpm's and Zeebe's stay beside it (and two of those are refused)."""
    camunda = sorted(
        (f for f in found if f[2] in _CAMUNDA_ORDER), key=lambda f: _CAMUNDA_ORDER.index(f[2])
    )
    for _key, value, origin in camunda[1:]:
        ignore(r.el, f"has {origin}={value!r}, which Camunda 7 ignores for {camunda[0][2]}")
    return [f for f in found if f[2] not in _CAMUNDA_ORDER] + camunda[:1]


_BINDINGS = {
    "latest": "latest",
    "version": "version",
    "versionTag": "versionTag",
    "deployment": "deployment",
}


def business_rule(decl: Declarations, r: Reader) -> Mapped:
    """A business rule task with ``camunda:decisionRef`` evaluates that DMN decision; one
    without is implemented like a service task (a class, an expression, an external topic)."""
    ref = r.attr("decisionRef", CAMUNDA)
    if ref is None:
        return service(decl, r)
    ref = ref.strip()
    if not ref or _EXPRESSION.search(ref):
        raise reject(
            r.el,
            f"has camunda:decisionRef={ref!r}",
            "name the decision's id; expressions are not supported yet",
        )
    binding = r.attr("decisionRefBinding", CAMUNDA) or "latest"
    if binding not in _BINDINGS:
        raise reject(
            r.el,
            f"has camunda:decisionRefBinding={binding!r}",
            "use latest, version, versionTag or deployment",
        )
    tenant = r.attr("decisionRefTenantId", CAMUNDA)
    if tenant is not None and not OWN_TENANT.match(tenant):
        raise reject(r.el, "has camunda:decisionRefTenantId", "bpm has no tenants; leave it out")
    decision: Mapped = {"key": ref, "binding": _BINDINGS[binding]}
    version = r.attr("decisionRefVersion", CAMUNDA)
    tag = r.attr("decisionRefVersionTag", CAMUNDA)
    if binding == "version":
        if version is None or not re.fullmatch(r"[0-9]{1,9}", version.strip()):
            raise reject(r.el, "binds to a version without a whole decisionRefVersion")
        decision["version"] = int(version)
    if binding == "versionTag":
        if not tag:
            raise reject(r.el, "binds to a version tag without camunda:decisionRefVersionTag")
        decision["versionTag"] = tag
    mode = r.attr("mapDecisionResult", CAMUNDA)
    if mode is not None:
        decision["mapResult"] = mode
    node: Mapped = {"type": "serviceTask", "decision": decision}
    result = r.attr("resultVariable", CAMUNDA)
    if result is not None and result.strip():
        node["resultVariable"] = result.strip()
    return node


def script(decl: Declarations, r: Reader, handlers: Collection[str] | None) -> Mapped:
    """An inline JavaScript script runs, sandboxed (``bpm.scripts``), and a ``juel`` one is an
    expression. Any other script never runs: a handler runs in its place. The handler is
    ``bpm:handler``; else, with a ``camunda:resultVariable`` (the script's result, which the
    handler returns), the one named after the script resource or the task; else a registered
    handler named like the task's id or name. Anything else is refused."""
    # Without a scriptFormat Camunda 7 reads the script as its default language, JUEL.
    fmt = (r.attr("scriptFormat") or "").strip() or "juel"
    body = r.child("script")
    if body is not None:
        Reader(body).finish()
    resource = r.attr("resource", CAMUNDA)
    result = r.attr("resultVariable", CAMUNDA)
    inline = inline_script(fmt, body.text if body is not None else None)
    if inline is not None and resource is None and r.attr("handler", BPM) is None:
        if result is not None and result.strip():
            inline["resultVariable"] = result.strip()
        return {"type": "serviceTask", **inline}
    named = [
        n
        for n in (script_stem(resource), r.el.attrib.get("id"), r.el.attrib.get("name"))
        if n is not None
    ]
    handler = r.attr("handler", BPM)
    if handler is None and result is not None and result.strip():
        handler = handler_name(named[0])
    if handler is None and handlers is not None:
        handler = next((handler_name(n) for n in named if handler_name(n) in handlers), None)
    if handler is None:
        off = fmt.lower() in JAVASCRIPT and not scripts_enabled() and resource is None
        why = f" ({SCRIPTS_SETTING}=off here)" if off else ""
        raise reject(
            r.el,
            f"holds a {fmt} script, which bpm never runs{why}",
            f"register a handler named {handler_name(named[0])!r} that does its work and deploy "
            f"with it imported (BPM_IMPORTS), or name one with bpm:handler",
        )
    node: Mapped = {"type": "serviceTask", "handler": handler}
    if result is not None and result.strip():
        node["resultVariable"] = result.strip()
    return node


def connector(r: Reader) -> Mapped | None:
    """``camunda:connector``: the handler registered under its ``connectorId``; its input
    parameters are the handler's ``ctx.fields``, its output parameters are evaluated over
    what the handler returns (and the variables), and only they are set, as in Camunda."""
    found = r.extension("connector", CAMUNDA)
    if found is None:
        return None
    cr = Reader(found)
    ident = cr.child("connectorId", CAMUNDA)
    if ident is None or not ident.text.strip():
        raise reject(found, "has no camunda:connectorId", "name the connector")
    Reader(ident).finish()
    mapped = camunda.input_output(cr, direct=True)
    cr.finish()
    spec: Mapped = {"id": ident.text.strip()}
    if "inputs" in mapped:
        spec["inputs"] = mapped["inputs"]
    if "outputs" in mapped:
        spec["outputs"] = mapped["outputs"]
    return {"type": "serviceTask", "connector": spec}


def _foreign_implementation(r: Reader) -> str | None:
    """An implementation attribute in a namespace the importer does not read: named, so the
    refusal says what to change. Named attributes count as read (the refusal covers them)."""
    for key, value in r.el.attrib.items():
        ns, _, local = key[1:].partition("}") if key.startswith("{") else ("", "", key)
        if ns not in ("", CAMUNDA, ZEEBE, BPM) and local in (
            "class",
            "expression",
            "delegateExpression",
            "type",
            "topic",
            "handler",
        ):
            r.used.add(key)
            return f"{local}={value!r} ({{{ns}}})"
    return None


def user(decl: Declarations, r: Reader) -> Mapped:
    """A user task: its people, dates and priority (names or ``${...}``/``#{...}``
    expressions, evaluated when the task is created) and its form."""
    node: Mapped = {"type": "userTask"}
    values = {attr: r.attr(attr, CAMUNDA) for attr in _USER_ATTRIBUTES}
    zeebe = r.extension("assignmentDefinition", ZEEBE)
    if zeebe is not None:
        zr = Reader(zeebe)
        for attr in ("assignee", "candidateGroups", "candidateUsers"):
            given = zr.attr(attr)
            values[attr] = values[attr] or given
        zr.finish()
    for attr, value in values.items():
        if value is None or not value.strip():
            continue
        value = value.strip().replace("#{", "${")
        if value.startswith("="):
            raise reject(
                r.el,
                f"has the FEEL expression {value!r} as its {attr}",
                "write a name or a ${...} expression",
            )
        if attr in ("dueDate", "followUpDate"):
            _check_date(r, attr, value)
        key = _USER_ATTRIBUTES[attr]
        if key.startswith("candidate"):
            node[key] = split_names(value)
        else:
            whole = key == "priority" and re.fullmatch(r"-?[0-9]{1,9}", value.strip())
            node[key] = int(value) if whole else value
    node.update(bpmn_forms.form(r))
    return node


#: camunda: attributes of a user task and the definition keys they become.
_USER_ATTRIBUTES = {
    "assignee": "assignee",
    "candidateUsers": "candidate_users",
    "candidateGroups": "candidate_groups",
    "dueDate": "due_date",
    "followUpDate": "follow_up_date",
    "priority": "priority",
}


def split_names(text: str) -> list[str]:
    """``a, ${b}, c`` -> ``["a", "${b}", "c"]``: commas inside an expression do not split."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [part.strip() for part in out if part.strip()]


def _check_date(r: Reader, attr: str, value: str) -> None:
    """An expression the safe evaluator cannot run (Java method calls such as
    ``dateTime().plusDays(2)``) is refused here, naming the attribute."""
    if not _EXPRESSION.search(value):
        return
    try:
        compile_expression(value, where=f"camunda:{attr}", kind="date expression")
    except InvalidExpression as exc:
        raise reject(
            r.el,
            f"has camunda:{attr}={value!r}, which bpm cannot evaluate ({exc})",
            "write an ISO 8601 duration such as P2D, an ISO 8601 date-time, or ${name} of a "
            "variable holding one",
        ) from None


def receive(decl: Declarations, r: Reader) -> Mapped:
    ref = r.attr("messageRef")
    return {"type": "receiveTask", "message": message(decl, r.el, ref)}


def plain(kind: str) -> Any:
    def mapper(decl: Declarations, r: Reader) -> Mapped:
        return {"type": kind}

    return mapper


def inclusive(decl: Declarations, r: Reader) -> Mapped:
    return {**exclusive(decl, r), "type": "inclusiveGateway"}


def event_based(decl: Declarations, r: Reader) -> Mapped:
    """An event-based gateway that waits in a running instance (``instantiate="false"``, its
    default, and the exclusive type); one that starts instances is refused."""
    if r.attr("instantiate") not in (None, "false"):
        raise reject(
            r.el,
            'has instantiate="true" (an event-based gateway that starts instances)',
            "start the process with a message or timer start event instead",
        )
    if r.attr("eventGatewayType") not in (None, "Exclusive"):
        raise reject(r.el, "is a parallel event-based gateway", "use an exclusive one")
    r.attr("gatewayDirection")
    return {"type": "eventBasedGateway"}


def exclusive(decl: Declarations, r: Reader) -> Mapped:
    node: Mapped = {"type": "exclusiveGateway"}
    default = r.attr("default")
    if default:
        node["default"] = default
    return node
