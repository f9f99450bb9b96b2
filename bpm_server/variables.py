"""Typed variables, Camunda's wire form, to and from bpm's JSON variables.

Camunda sends each variable as ``{"value": V, "type": T, "valueInfo": {...}}``. bpm keeps
variables as JSON values, so reading a typed value turns it into the JSON value it stands for,
and writing one picks the Camunda type a JSON value reads as:

======================  ====================================  ==========================
Camunda type            bpm value                             written back as
======================  ====================================  ==========================
String                  string                                String
Integer, Long, Short    integer                               Integer (Long past 32 bits)
Double                  number                                Double
Boolean                 true / false                          Boolean
Date                    string ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``  String (bpm has no date)
Json, Object (JSON)     object or array                       Json (its JSON text)
Null                    null                                  Null
no type                 as the JSON value reads               as its value reads
======================  ====================================  ==========================

Refused, with a 400 that says why: a Java-serialized object (bpm runs no Java and will not
deserialize foreign object streams), Bytes, File and Xml (no JSON value holds them), and any
type name Camunda does not have. ``valueInfo.transient`` variables are not stored.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from typing import Any, NoReturn

from bpm.api import InvalidRequest
from bpm_server.dates import format_date, parse_date

JSON_FORMAT = "application/json"
JAVA_FORMAT = "application/x-java-serialized-object"
_INT32 = 2**31 - 1
_INTEGERS = {"integer": _INT32, "short": 2**15 - 1, "long": 2**63 - 1}


def decode_variables(wire: Mapping[str, Any] | None) -> dict[str, Any]:
    """A request's variable map as bpm variables (None and ``{}`` are no variables)."""
    if wire is None:
        return {}
    if not isinstance(wire, Mapping):
        raise InvalidRequest("variables must be an object of name -> typed value")
    out: dict[str, Any] = {}
    for name, typed in wire.items():
        if not isinstance(typed, Mapping):
            raise InvalidRequest(f"variable {name!r}: {not_typed(typed)}")
        info = typed.get("valueInfo") or {}
        if isinstance(info, Mapping) and info.get("transient") is True:
            continue  # lives for the call only; bpm stores every variable it is given
        out[name] = decode_value(name, typed.get("value"), typed.get("type"), info)
    return out


def decode_value(name: str, value: Any, type_name: Any, info: Any) -> Any:
    """One typed value as a JSON value. Type names match with their first letter in either
    case, as Camunda reads them (``integer`` and ``Integer`` are the same)."""
    if type_name is None:
        return _untyped(name, value)
    if not isinstance(type_name, str) or not type_name:
        raise InvalidRequest(f"variable {name!r}: type must be a string")
    kind = type_name[0].lower() + type_name[1:]
    kind = kind.lower() if kind.lower() in _KNOWN else kind
    if value is None and kind not in ("object", "json", "xml", "bytes", "file"):
        return None
    match kind:
        case "string":
            return value if isinstance(value, str) else _refuse(name, value, "a string")
        case "integer" | "long" | "short":
            return _integer(name, value, kind)
        case "double":
            return _double(name, value)
        case "boolean":
            return _boolean(name, value)
        case "date":
            if not isinstance(value, str):
                return _refuse(name, value, "a date string")
            return format_date(parse_date(value))
        case "null":
            return None
        case "json":
            return _json_text(name, value)
        case "object":
            return _object(name, value, info if isinstance(info, Mapping) else {})
        case "bytes" | "file" | "xml":
            raise InvalidRequest(
                f"variable {name!r}: type {type_name} is not supported; bpm variables are JSON"
                " values (send a String, or a Json / Object with application/json)"
            )
    raise InvalidRequest(f"variable {name!r}: {unknown_type(type_name)}")


#: The value types, as Camunda spells them; the last three are refused with a reason.
TYPES: tuple[str, ...] = ("String", "Integer", "Long", "Short", "Double", "Boolean", "Date")
TYPES += ("Json", "Object", "Null", "Bytes", "File", "Xml")
_KNOWN = {t.lower() for t in TYPES}


def not_typed(value: Any) -> str:
    """What to say of a variable sent as a plain value: every variable is a typed value,
    and the one that was meant is shown."""
    meant = encode_value(value) if _is_json(value) else {"type": "String", "value": "..."}
    shown = json.dumps({"value": meant["value"], "type": meant["type"]}, ensure_ascii=False)
    if len(shown) > 120:
        shown = json.dumps({"value": "...", "type": meant["type"]})
    return (
        'a variable is an object {"value": ..., "type": ...}, not a plain value: send '
        f"{shown} (type is one of {', '.join(TYPES[:-3])}; it may be left out)"
    )


def unknown_type(type_name: str) -> str:
    """What to say of a type name no Camunda type has: the types there are, and the one
    meant if the name is a near miss (``Strng``)."""
    near = difflib.get_close_matches(type_name.capitalize(), TYPES, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"unknown value type {type_name!r}: the types are {', '.join(TYPES)}{hint}"


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def encode_variables(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """bpm variables as typed values; every one carries a string ``type`` (clients index
    into it), and a Json value is its JSON text (clients parse it)."""
    return {name: encode_value(value) for name, value in values.items()}


def encode_value(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "Null", "value": None, "valueInfo": {}}
    if isinstance(value, bool):
        return {"type": "Boolean", "value": value, "valueInfo": {}}
    if isinstance(value, int):
        kind = "Integer" if -_INT32 - 1 <= value <= _INT32 else "Long"
        return {"type": kind, "value": value, "valueInfo": {}}
    if isinstance(value, float):
        return {"type": "Double", "value": value, "valueInfo": {}}
    if isinstance(value, str):
        return {"type": "String", "value": value, "valueInfo": {}}
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return {"type": "Json", "value": text, "valueInfo": {}}


def _untyped(name: str, value: Any) -> Any:
    """No type: the JSON value as it is (an object or array stays one)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRequest(f"variable {name!r}: {value} is not a JSON number")
    return value


def _integer(name: str, value: Any, kind: str) -> int:
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            return _refuse(name, value, f"an {kind}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return _refuse(name, value, f"an {kind}")
    limit = _INTEGERS[kind]
    if not -limit - 1 <= value <= limit:
        raise InvalidRequest(f"variable {name!r}: {value} does not fit a {kind}")
    return value


def _double(name: str, value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return _refuse(name, value, "a double")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return _refuse(name, value, "a finite double")
    return float(value)


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        return _refuse(name, value, "a boolean")
    return value


def _json_text(name: str, value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"variable {name!r}: a Json value must be its JSON text, a string")
    try:
        return json.loads(value)
    except ValueError as exc:
        raise InvalidRequest(f"variable {name!r}: its value is not JSON text: {exc}") from exc


def _object(name: str, value: Any, info: Mapping[str, Any]) -> Any:
    fmt = info.get("serializationDataFormat") or JSON_FORMAT
    if fmt == JAVA_FORMAT:
        raise InvalidRequest(
            f"variable {name!r}: a Java-serialized object is refused: bpm stores JSON values"
            " and never deserializes object streams (they can run code); send the object"
            f" with serializationDataFormat {JSON_FORMAT}"
        )
    if fmt != JSON_FORMAT:
        raise InvalidRequest(
            f"variable {name!r}: serializationDataFormat {fmt!r} is not supported;"
            f" use {JSON_FORMAT}"
        )
    return _json_text(name, value)


def _refuse(name: str, value: Any, wanted: str) -> NoReturn:
    raise InvalidRequest(f"variable {name!r}: {value!r} is not {wanted}")
