"""Camunda's typed variable values, as the HTTP API sends and takes them, for the worker.

A value travels as ``{"type": ..., "value": ...}``: bpm's variables are JSON values, so each
is sent as the type Camunda names it by (``String``, ``Boolean``, ``Integer`` or ``Long``,
``Double``, ``Null``) and objects and lists as ``Json`` text, which the server reads back as
the same value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from bpm.errors import BadVariables

_INT32 = 2**31


def encode(values: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {name: _typed(name, value) for name, value in (values or {}).items()}


def _typed(name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "Null", "value": None}
    if isinstance(value, bool):
        return {"type": "Boolean", "value": value}
    if isinstance(value, int):
        kind = "Integer" if -_INT32 <= value < _INT32 else "Long"
        return {"type": kind, "value": value}
    if isinstance(value, float):
        return {"type": "Double", "value": value}
    if isinstance(value, str):
        return {"type": "String", "value": value}
    if isinstance(value, dict | list):
        return {"type": "Json", "value": orjson.dumps(value).decode()}
    raise BadVariables(
        f"variable {name!r}: a {type(value).__name__} is not a JSON value; send text, a "
        f"number, a boolean, null, a list or an object"
    )


def decode(typed: Mapping[str, Any] | None) -> dict[str, Any]:
    """The values of a typed variable map; ``Json`` (and ``Object`` in JSON) parsed, dates
    kept as the text the server sent."""
    out: dict[str, Any] = {}
    for name, item in (typed or {}).items():
        kind = str(item.get("type") or "")
        value = item.get("value")
        if kind in ("Json", "Object") and isinstance(value, str):
            value = orjson.loads(value)
        out[name] = value
    return out
