"""Checking variables at the edge, so bad input is refused before anything is written."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from bpm.errors import BadVariables

MAX_NAME_LENGTH = 255
MAX_PAYLOAD_BYTES = 1024 * 1024


def check_variables(values: object, *, where: str) -> dict[str, Any]:
    """Return ``values`` as a plain dict, or raise ``BadVariables`` naming the culprit.

    Values must be JSON (no NaN or infinity, no sets, no objects), names non-empty strings, and
    the whole payload at most ``MAX_PAYLOAD_BYTES`` once encoded.
    """
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise BadVariables(f"{where}: variables must be a JSON object, got {type(values).__name__}")
    out: dict[str, Any] = {}
    size = 0
    for name, value in values.items():
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_LENGTH:
            raise BadVariables(
                f"{where}: variable name {name!r} must be a non-empty string of "
                f"at most {MAX_NAME_LENGTH} characters",
                str(name),
            )
        _check_keys(value, name, where)
        try:
            encoded = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise BadVariables(
                f"{where}: variable {name!r} is not JSON ({_why(value, exc)})", name
            ) from exc
        size += len(encoded) + len(name)
        if size > MAX_PAYLOAD_BYTES:
            raise BadVariables(
                f"{where}: variables exceed {MAX_PAYLOAD_BYTES} bytes (reached at {name!r})", name
            )
        out[name] = json.loads(encoded)
    return out


def _check_keys(value: Any, name: str, where: str, depth: int = 0) -> None:
    """JSON object keys are strings; ``json.dumps`` would silently rewrite others (and merge
    ``1`` with ``"1"``), so they are refused instead."""
    if depth > 100:
        raise BadVariables(f"{where}: variable {name!r} is nested more than 100 levels", name)
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise BadVariables(
                    f"{where}: variable {name!r} is not JSON (object key {key!r} is not a string)",
                    name,
                )
            _check_keys(item, name, where, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_keys(item, name, where, depth + 1)


def _why(value: Any, exc: Exception) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a JSON number"
    return str(exc)
