"""A ``conditionalEventDefinition`` read from BPMN: its ``condition`` (a ``tFormalExpression``,
JUEL ``${...}``, FEEL ``=...`` or a plain condition, as a flow's) and Camunda's
``variableName`` and ``variableEvents`` (comma-separated), as the JSON ``condition`` object."""

from __future__ import annotations

from typing import Any

from bpm.definitions.bpmn_feel import FeelUnsupported, translate_condition
from bpm.definitions.bpmn_names import CAMUNDA
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.bpmn_xml import XmlElement
from bpm.definitions.code import inline_script
from bpm.script_values import SCRIPT_KEY


def condition(event: XmlElement, definition: XmlElement) -> dict[str, Any]:
    reader = Reader(definition)
    name = reader.attr("variableName", CAMUNDA)
    events = reader.attr("variableEvents", CAMUNDA)
    body = reader.child("condition")
    reader.finish()
    if body is None:
        raise reject(event, "has a conditionalEventDefinition without a condition", "add one")
    body_reader = Reader(body)
    language = body_reader.attr("language")
    body_reader.finish()
    if language and language.lower() not in {"juel", "feel", "${juel}"}:
        raise reject(
            event,
            f"has a condition in language {language!r}, which is not supported",
            "write it as JUEL ${...}, FEEL =... or a plain condition",
        )
    try:
        text = translate_condition(body.text)
    except FeelUnsupported as exc:
        raise reject(event, f"has a FEEL condition that cannot be translated: {exc}") from None
    if not text:
        raise reject(event, "has an empty condition", "write the condition it waits for")
    spec: dict[str, Any] = {"expression": text}
    if name is not None and name.strip():
        spec["variableName"] = name.strip()
    if events is not None and events.strip():
        spec["variableEvents"] = [e.strip() for e in events.split(",") if e.strip()]
    return spec


def flow_condition(flow: XmlElement, condition: XmlElement) -> Any:
    """A sequence flow's ``conditionExpression``: JavaScript, JUEL, FEEL or plain."""
    reader = Reader(condition)
    language = reader.attr("language")
    reader.finish()
    script = inline_script(language or "", condition.text) if language else None
    if script is not None and "script" in script:  # JavaScript: its last value decides
        return {SCRIPT_KEY: script["script"]}
    if language and language.lower() not in {"juel", "feel", "${juel}"}:
        raise reject(
            flow,
            f"has a condition in language {language!r}, which is not supported",
            "write it as JUEL ${...}, FEEL =... or a plain condition",
        )
    try:
        text = translate_condition(condition.text)
    except FeelUnsupported as exc:
        raise reject(
            flow,
            f"has a FEEL condition {condition.text.strip()!r} that cannot be translated: {exc}",
        ) from None
    if not text:
        raise reject(
            flow, "has an empty conditionExpression", "remove it for an unconditional flow"
        )
    return text
