"""Camunda's process-instance query, as GET parameters or a POST body, as a bpm filter.

A filter bpm cannot honour is refused with 400 naming it (an ignored one would answer wrong).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from bpm.api import InvalidRequest, LiveInstanceQuery, VariableCondition, VariableOp, quoted
from bpm_server.definition_models import definition_uuid
from bpm_server.ids import split, uuids
from bpm_server.query_params import Kind, QuerySpec

SPEC = QuerySpec(
    "process instance",
    {
        "processInstanceIds": Kind.TEXTS,
        "businessKey": Kind.TEXT,
        "businessKeyLike": Kind.TEXT,
        "processDefinitionKey": Kind.TEXT,
        "processDefinitionKeyIn": Kind.TEXTS,
        "processDefinitionId": Kind.TEXT,
        "active": Kind.BOOL,
        "suspended": Kind.BOOL,
        "withIncident": Kind.BOOL,
        "incidentId": Kind.TEXT,
        "superProcessInstance": Kind.TEXT,
        "subProcessInstance": Kind.TEXT,
        "rootProcessInstances": Kind.BOOL,
        "variables": Kind.CONDITIONS,
        "variableNamesIgnoreCase": Kind.BOOL,
        "variableValuesIgnoreCase": Kind.BOOL,
    },
    {
        "instanceId": "instanceId",
        "definitionKey": "definitionKey",
        "definitionId": "definitionId",
        "businessKey": "businessKey",
        "tenantId": None,
    },
    {
        "tenantIdIn": "bpm has no tenants",
        "withoutTenantId": "bpm has no tenants",
        "caseInstanceId": "bpm has no CMMN cases",
    },
)
_CONDITION = re.compile(r"^(.+?)_(eq|neq|gteq|gt|lteq|lt|like)_(.*)$", re.DOTALL)
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$", re.ASCII)
#: The digits of the longest 64-bit integer.
_INT_DIGITS = 19
_RANGE = "is not a 64-bit integer or a finite floating-point number"


def live_filter(q: Mapping[str, Any]) -> LiveInstanceQuery | None:
    """A filter from Camunda's query fields (the GET parameters as strings, or the POST
    body's values); None when it can match nothing."""
    if _true(q.get("suspended")):
        raise InvalidRequest("suspended=true: bpm has no suspended process instances")
    for name in ("variableNamesIgnoreCase", "variableValuesIgnoreCase"):
        if _true(q.get(name)):
            raise InvalidRequest(f"{name}=true: bpm compares variable names and values exactly")
    ids = _list(q.get("processInstanceIds"))
    definition = q.get("processDefinitionId")
    definition_ids = None
    if definition is not None:
        found = definition_uuid(str(definition))[0]
        if found is None:
            return None
        definition_ids = [found]
    keys = _list(q.get("processDefinitionKeyIn"))
    single = q.get("processDefinitionKey")
    if single is not None:  # with both, a key must be that one and in the list
        keys = [str(single)] if keys is None else [k for k in keys if k == single]
    incident = q.get("incidentId")
    incident_ids = None if incident is None else uuids([str(incident)])
    calls = [q.get(name) for name in ("superProcessInstance", "subProcessInstance")]
    super_ids, sub_ids = (None if c is None else uuids([str(c)]) for c in calls)
    if (ids is not None and not uuids(ids)) or [] in (incident_ids, super_ids, sub_ids):
        return None
    return LiveInstanceQuery(
        ids=None if ids is None else uuids(ids),
        business_key=q.get("businessKey"),
        business_key_like=q.get("businessKeyLike"),
        keys=keys,
        definition_ids=definition_ids,
        with_incident=_true(q.get("withIncident")),
        incident_ids=incident_ids,
        called_by=super_ids[0] if super_ids else None,
        calling=sub_ids[0] if sub_ids else None,
        only_roots=_true(q.get("rootProcessInstances")),
        variables=tuple(_conditions(q.get("variables"))),
    )


def _true(value: Any) -> bool:
    if value is None or value is False:
        return False
    if value is True:
        return True
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidRequest(f"{value!r} is not true or false")
    return text == "true"


def _list(value: Any) -> list[str] | None:
    if value is None or isinstance(value, list):
        return value
    return split(str(value))


def _get_conditions(text: str | None) -> list[VariableCondition]:
    """``name_op_value`` conditions, comma separated; a value reads as a number or a
    boolean when it is written as one (``amount_gt_100``), else as a string."""
    out = []
    for part in split(text) or []:
        found = _CONDITION.match(part)
        if found is None:
            raise InvalidRequest(
                f"variables: {part!r} is not name_operator_value"
                " (operators: eq, neq, gt, gteq, lt, lteq, like)"
            )
        name, op, raw = found.groups()
        value: Any = raw
        if op != "like" and raw in ("true", "false"):
            value = raw == "true"
        elif op != "like" and _NUMBER.match(raw):
            value = _number(raw, name)
        out.append(VariableCondition(name, VariableOp(op), value))
    return out


def _conditions(given: str | list[Mapping[str, Any]] | None) -> list[VariableCondition]:
    """A query string's conditions (text) or a body's (a list of {name, operator, value})."""
    if given is None or isinstance(given, str):
        return _get_conditions(given)
    return _body_conditions(given)


def _body_conditions(items: list[Mapping[str, Any]]) -> list[VariableCondition]:
    out = []
    for item in items:
        name, operator, value = item["name"], item["operator"], item.get("value")
        try:
            op = VariableOp(operator)
        except ValueError:
            raise InvalidRequest(
                f"variables: operator {operator!r} of {name!r} is not supported"
                " (eq, neq, gt, gteq, lt, lteq, like)"
            ) from None
        if op != VariableOp.EQ and op != VariableOp.NEQ and isinstance(value, dict | list):
            raise InvalidRequest(f"variables: {op} compares numbers or strings, not {value!r}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            _check_number(value, name)
        out.append(VariableCondition(name, op, value))
    return out


def _number(raw: str, name: str) -> int | float:
    """A filter's number as written; its digits are counted before they are converted, so
    a number of thousands of digits is refused rather than parsed."""
    if any(c in raw for c in ".eE"):
        value: int | float = float(raw)
    elif len(raw.lstrip("-")) > _INT_DIGITS:
        raise InvalidRequest(f"variables: the value of {quoted(name)}, {quoted(raw)}, {_RANGE}")
    else:
        value = int(raw)
    _check_number(value, name)
    return value


def _check_number(value: int | float, name: str) -> None:
    """A number the database compares: a 64-bit integer or a finite double."""
    if isinstance(value, float):
        ok = math.isfinite(value)
    else:
        ok = -(2**63) <= value < 2**63
    if not ok:
        raise InvalidRequest(f"variables: the value of {quoted(name)}, {quoted(value)}, {_RANGE}")
