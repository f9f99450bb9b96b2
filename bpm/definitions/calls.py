"""A call activity's keys in the JSON format: which process it starts, which version, and
the variables that cross the call each way.

    {"id": "charge", "type": "callActivity", "process": "payment",
     "binding": "latest" | "version" | "versionTag" | "deployment",
     "version": 3 or "${v}", "versionTag": "2.1",
     "in": [{"source": "amount", "target": "total"}, {"expression": "${a + b}", "target": "c"},
            {"all": true}, {"all": true, "local": true}],
     "out": [{"source": "receipt", "target": "receipt"}, {"all": true}],
     "businessKey": "${orderId}" or "inheritBusinessKey": true,
     "mapping": "handler name"}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bpm.definitions.assignments import is_expression, parse_text
from bpm.definitions.mappings import VARIABLE_NAME, any_variable_name
from bpm.definitions.model import CallBinding, CallMapping, CallSpec
from bpm.definitions.parse.patterns import NAME_PATTERN, NAME_RULE
from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression

CALL_KEYS = {
    "process",
    "binding",
    "version",
    "versionTag",
    "in",
    "out",
    "businessKey",
    "inheritBusinessKey",
    "mapping",
}
MAPPING_KEYS = {"source", "expression", "target", "all", "local"}
#: The most ``in`` or ``out`` entries one call activity may have.
MAX_MAPPINGS = 500


def parse_call(raw: Mapping[str, Any], where: str, node_id: str) -> CallSpec:
    process = parse_text(raw.get("process"), "process", where, node_id)
    binding = _binding(raw.get("binding", "latest"), where, node_id)
    version = raw.get("version")
    tag = raw.get("versionTag")
    if binding is CallBinding.VERSION:
        version_text = _version(version, where, node_id)
    elif version is not None:
        raise InvalidDefinition(f'{where}: \'version\' needs "binding": "version"', node_id)
    else:
        version_text = None
    if binding is CallBinding.VERSION_TAG:
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidDefinition(
                f'{where}: "binding": "versionTag" needs a non-empty \'versionTag\'', node_id
            )
        tag = tag.strip()
    elif tag is not None:
        raise InvalidDefinition(f'{where}: \'versionTag\' needs "binding": "versionTag"', node_id)
    inherit = raw.get("inheritBusinessKey", False)
    if not isinstance(inherit, bool):
        raise InvalidDefinition(f"{where}: 'inheritBusinessKey' must be true or false", node_id)
    key_expression = raw.get("businessKey")
    if inherit and key_expression is not None:
        raise InvalidDefinition(
            f"{where}: give 'businessKey' or 'inheritBusinessKey', not both", node_id
        )
    return CallSpec(
        process=process,
        binding=binding,
        version=version_text,
        version_tag=tag,
        inputs=_mappings(raw.get("in"), "in", where, node_id),
        outputs=_mappings(raw.get("out"), "out", where, node_id),
        business_key=(
            _expression(key_expression, "businessKey", where, node_id)
            if key_expression is not None
            else None
        ),
        business_key_from_caller=inherit,
        mapping=_handler(raw.get("mapping"), where, node_id),
    )


def _handler(value: Any, where: str, node_id: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not NAME_PATTERN.match(value):
        raise InvalidDefinition(f"{where}: 'mapping' must be a handler name: {NAME_RULE}", node_id)
    return value


def _binding(raw: Any, where: str, node_id: str) -> CallBinding:
    try:
        return CallBinding(raw)
    except ValueError:
        allowed = ", ".join(b.value for b in CallBinding)
        raise InvalidDefinition(
            f"{where}: 'binding' must be one of {allowed}, got {raw!r}", node_id
        ) from None


def _version(raw: Any, where: str, node_id: str) -> str | Expression:
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 1:
        return str(raw)
    if isinstance(raw, str) and (raw.strip().isdigit() or is_expression(raw)):
        return parse_text(raw, "version", where, node_id)
    raise InvalidDefinition(
        f'{where}: "binding": "version" needs a \'version\' (a number from 1, or a ${{...}}'
        f" expression), got {raw!r}",
        node_id,
    )


def parse_in(raw: Any, where: str, node_id: str) -> tuple[CallMapping, ...]:
    """An ``in`` list as a call activity's (a signal throw's variables use it too)."""
    return _mappings(raw, "in", where, node_id)


def _mappings(raw: Any, key: str, where: str, node_id: str) -> tuple[CallMapping, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_MAPPINGS:
        raise InvalidDefinition(
            f"{where}: {key!r} must be a list of at most {MAX_MAPPINGS} objects", node_id
        )
    return tuple(_mapping(item, f"{where} {key}[{n}]", node_id) for n, item in enumerate(raw))


def _mapping(item: Any, where: str, node_id: str) -> CallMapping:
    if not isinstance(item, Mapping):
        raise InvalidDefinition(f"{where}: must be an object, got {item!r}", node_id)
    unknown = set(item) - MAPPING_KEYS
    if unknown:
        raise InvalidDefinition(
            f"{where}: unknown keys {sorted(unknown)} (known: {sorted(MAPPING_KEYS)})", node_id
        )
    local = item.get("local", False)
    every = item.get("all", False)
    if not isinstance(local, bool) or not isinstance(every, bool):
        raise InvalidDefinition(f"{where}: 'all' and 'local' must be true or false", node_id)
    if every:
        if {"source", "expression", "target"} & set(item):
            raise InvalidDefinition(
                f'{where}: "all": true copies every variable; it takes no source, expression'
                " or target",
                node_id,
            )
        return CallMapping(all=True, local=local)
    target = _name(item.get("target"), "target", where, node_id)
    if ("source" in item) == ("expression" in item):
        raise InvalidDefinition(f"{where}: give a 'source' or an 'expression'", node_id)
    if "source" in item:
        return CallMapping(
            target=target, source=_name(item["source"], "source", where, node_id), local=local
        )
    expression = _expression(item["expression"], "expression", where, node_id)
    return CallMapping(target=target, expression=expression, local=local)


def _name(raw: Any, key: str, where: str, node_id: str) -> str:
    if key == "target" and any_variable_name(raw):  # Camunda writes any name it is given
        return str(raw)
    if not isinstance(raw, str) or not VARIABLE_NAME.match(raw):
        raise InvalidDefinition(
            f"{where}: {key!r} must be a variable name ({VARIABLE_NAME.pattern}), got {raw!r}",
            node_id,
        )
    return raw


def _expression(raw: Any, key: str, where: str, node_id: str) -> Expression:
    if isinstance(raw, str) and "${" not in raw and "#{" not in raw:
        raw = "${" + json.dumps(raw) + "}"  # JUEL text without ${...} is that text
    if not isinstance(raw, str) or not is_expression(raw):
        raise InvalidDefinition(f"{where}: {key!r} must be a ${{...}} expression", node_id)
    try:
        return compile_expression(raw.strip(), where=where, kind=f"{key} expression")
    except InvalidExpression as exc:
        raise InvalidDefinition(str(exc), node_id) from exc
