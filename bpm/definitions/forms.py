"""The form of a user task or a start event: a form key or a reference to a deployed form,
and the fields the engine checks submitted variables against.

A definition's ``form`` is checked here at deploy, so a field with an unknown rule, a rule
that cannot apply to its type or a date pattern the engine cannot read never reaches a
running task. Submitted values are checked against the compiled fields in
``bpm.definitions.form_values``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bpm.definitions.mappings import Composite, any_variable_name, composite
from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression

FORM_KEYS = {"key", "ref", "fields", "businessKey"}
REF_KEYS = {"id", "binding", "version"}
FIELD_KEYS = {"id", "label", "type", "defaultValue", "datePattern", "values", "validation"}
FIELD_KEYS |= {"properties"}
#: The date pattern of a date field that gives none.
DEFAULT_DATE_PATTERN = "dd/MM/yyyy"
_TYPE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")
_WRAPPED = re.compile(r"\s*\$\{.*\}\s*", re.DOTALL)
_PART = re.compile(r"\$\{[^}]*\}")


class FieldType(StrEnum):
    """The field types with a meaning of their own; any other name is a custom type, whose
    values are not type-checked."""

    STRING = "string"
    LONG = "long"
    BOOLEAN = "boolean"
    DATE = "date"
    ENUM = "enum"


class FormBinding(StrEnum):
    """Which version of a referenced form a task shows."""

    LATEST = "latest"
    DEPLOYMENT = "deployment"
    VERSION = "version"


class Rule(StrEnum):
    """The constraints a field may declare."""

    REQUIRED = "required"
    READONLY = "readonly"
    MINLENGTH = "minlength"
    MAXLENGTH = "maxlength"
    MIN = "min"
    MAX = "max"


FLAGS = (Rule.REQUIRED, Rule.READONLY)
LENGTHS = (Rule.MINLENGTH, Rule.MAXLENGTH)
BOUNDS = (Rule.MIN, Rule.MAX)
#: The rules each type takes besides required and readonly (a custom type takes them all).
_TYPED_RULES: Mapping[str, tuple[Rule, ...]] = {
    FieldType.STRING: LENGTHS,
    FieldType.ENUM: LENGTHS,
    FieldType.LONG: BOUNDS,
    FieldType.BOOLEAN: (),
    FieldType.DATE: (),
}
#: Java date pattern letters and what ``datetime.strptime`` reads for them, by run length.
_PATTERN_LETTERS: Mapping[str, Mapping[int, str]] = {
    "y": {1: "%Y", 2: "%y", 3: "%Y", 4: "%Y"},
    "M": {1: "%m", 2: "%m", 3: "%b", 4: "%B"},
    "d": {1: "%d", 2: "%d"},
    "H": {1: "%H", 2: "%H"},
    "h": {1: "%I", 2: "%I"},
    "m": {1: "%M", 2: "%M"},
    "s": {1: "%S", 2: "%S"},
    "S": {1: "%f", 2: "%f", 3: "%f"},
    "a": {1: "%p"},
    "E": {1: "%a", 2: "%a", 3: "%a", 4: "%A"},
    "Z": {1: "%z"},
    "X": {1: "%z", 2: "%z", 3: "%z"},
}


@dataclass(frozen=True)
class FormField:
    """One field: the variable it fills, its type and its rules (``Rule`` -> config)."""

    id: str
    type: str
    default: Any = None
    #: ``datetime.strptime``'s reading of a date field's pattern.
    date_format: str | None = None
    date_pattern: str | None = None
    values: tuple[str, ...] = ()
    rules: Mapping[Rule, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FormSpec:
    """A node's form; ``document`` is the form as the definition wrote it (for views)."""

    document: Mapping[str, Any]
    fields: tuple[FormField, ...] = ()
    #: A start form's field whose value becomes the business key of the instance it starts
    #: (Camunda's ``camunda:formData businessKey``).
    business_key_field: str | None = None

    def business_key(self, submitted: Mapping[str, Any]) -> str | None:
        """The business key a start form's submission gives, or None."""
        if self.business_key_field is None:
            return None
        value = submitted.get(self.business_key_field)
        if value is None or isinstance(value, bool) or not isinstance(value, str | int):
            return None
        return str(value) or None

    @property
    def evaluates(self) -> bool:
        """Whether showing the form evaluates an expression (a default written as one)."""
        return any(isinstance(f.default, Expression | Composite) for f in self.fields)


def parse_form(raw: Any, where: str, node_id: str) -> FormSpec | None:
    """A node's ``form``: ``key`` (any text) or ``ref`` (a deployed form), and ``fields``."""
    if raw is None:
        return None
    what = f"{where} 'form'"
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{what} must be an object", node_id)
    _keys(raw, FORM_KEYS, what, node_id)
    if "key" in raw and "ref" in raw:
        raise InvalidDefinition(f"{what}: give 'key' or 'ref', not both", node_id)
    if "key" in raw and (not isinstance(raw["key"], str) or not raw["key"].strip()):
        raise InvalidDefinition(f"{what}: 'key' must be a non-empty string", node_id)
    if "ref" in raw:
        _ref(raw["ref"], what, node_id)
    fields = raw.get("fields", [])
    if not isinstance(fields, list):
        raise InvalidDefinition(f"{what}: 'fields' must be a list of fields", node_id)
    compiled = tuple(_field(f, what, node_id) for f in fields)
    ids = [f.id for f in compiled]
    for field_id in ids:
        if ids.count(field_id) > 1:
            raise InvalidDefinition(f"{what}: field {field_id!r} appears twice", node_id)
    key_field = raw.get("businessKey")
    if key_field is not None and key_field not in ids:
        raise InvalidDefinition(
            f"{what}: 'businessKey' must name one of its fields ({', '.join(ids) or 'none'}), "
            f"got {key_field!r}",
            node_id,
        )
    return FormSpec(json.loads(json.dumps(raw)), compiled, key_field)


def _keys(raw: Mapping[str, Any], allowed: set[str], what: str, node_id: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidDefinition(
            f"{what}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})", node_id
        )


def _ref(raw: Any, what: str, node_id: str) -> None:
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{what}: 'ref' must be an object with an 'id'", node_id)
    _keys(raw, REF_KEYS, f"{what} 'ref'", node_id)
    if not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise InvalidDefinition(f"{what}: 'ref' needs an 'id', the form's id", node_id)
    try:
        binding = FormBinding(raw.get("binding", FormBinding.LATEST))
    except ValueError:
        raise InvalidDefinition(
            f"{what}: ref 'binding' must be latest, deployment or version, got "
            f"{raw.get('binding')!r}",
            node_id,
        ) from None
    version = raw.get("version")
    whole = isinstance(version, int) and not isinstance(version, bool) and version >= 1
    if binding is FormBinding.VERSION and not whole:
        raise InvalidDefinition(f"{what}: ref binding 'version' needs a 'version' >= 1", node_id)
    if binding is not FormBinding.VERSION and version is not None:
        raise InvalidDefinition(f"{what}: ref 'version' needs the binding 'version'", node_id)


def _field(raw: Any, what: str, node_id: str) -> FormField:
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{what}: every field is an object", node_id)
    field_id = raw.get("id")
    if not any_variable_name(field_id):
        raise InvalidDefinition(
            f"{what}: a field's 'id' is the variable it fills, a printable text of 1 to 255 "
            f"characters, got {field_id!r}",
            node_id,
        )
    assert isinstance(field_id, str)
    at = f"{what} field {field_id!r}"
    _keys(raw, FIELD_KEYS, at, node_id)
    kind = raw.get("type", FieldType.STRING)
    if not isinstance(kind, str) or not _TYPE_NAME.match(kind):
        raise InvalidDefinition(f"{at}: 'type' must be a type name, got {kind!r}", node_id)
    if "label" in raw and not isinstance(raw["label"], str):
        raise InvalidDefinition(f"{at}: 'label' must be a string", node_id)
    props = raw.get("properties", {})
    if not isinstance(props, Mapping) or not all(isinstance(v, str) for v in props.values()):
        raise InvalidDefinition(f"{at}: 'properties' must be an object of name -> text", node_id)
    values = _values(raw, kind, at, node_id)
    pattern, date_format = _date_pattern(raw, kind, at, node_id)
    rules = _rules(raw.get("validation", {}), kind, at, node_id)
    default = _default(raw.get("defaultValue"), kind, at, node_id)
    if values and not isinstance(default, Expression | Composite | None) and default not in values:
        raise InvalidDefinition(
            f"{at}: defaultValue {default!r} is not one of its values ({', '.join(values)})",
            node_id,
        )
    return FormField(field_id, kind, default, date_format, pattern, values, rules)


def _values(raw: Mapping[str, Any], kind: str, at: str, node_id: str) -> tuple[str, ...]:
    values = raw.get("values")
    if kind != FieldType.ENUM:
        if values is not None:
            raise InvalidDefinition(f"{at}: 'values' belong to an enum field", node_id)
        return ()
    if values is None:  # Camunda 7 takes an enum with no values: no value is then valid
        return ()
    if not isinstance(values, list):
        raise InvalidDefinition(f"{at}: an enum field's 'values' must be a list", node_id)
    ids = []
    for value in values:
        if (
            not isinstance(value, Mapping)
            or not isinstance(value.get("id"), str)
            or not value["id"]
            or not all(isinstance(v, str) for v in value.values())
            or set(value) - {"id", "name"}
        ):
            raise InvalidDefinition(
                f"{at}: each enum value is an object with an 'id' and an optional 'name'", node_id
            )
        if value["id"] in ids:
            raise InvalidDefinition(f"{at}: enum value {value['id']!r} appears twice", node_id)
        ids.append(value["id"])
    return tuple(ids)


def _date_pattern(
    raw: Mapping[str, Any], kind: str, at: str, node_id: str
) -> tuple[str | None, str | None]:
    pattern = raw.get("datePattern")
    if kind != FieldType.DATE:
        if pattern is not None:
            raise InvalidDefinition(f"{at}: 'datePattern' belongs to a date field", node_id)
        return None, None
    pattern = DEFAULT_DATE_PATTERN if pattern is None else pattern
    if not isinstance(pattern, str) or not pattern.strip():
        raise InvalidDefinition(f"{at}: 'datePattern' must be a non-empty string", node_id)
    return pattern, date_format(pattern, at, node_id)


def date_format(pattern: str, at: str, node_id: str | None) -> str:
    """A Java date pattern (``dd/MM/yyyy``, ``yyyy-MM-dd'T'HH:mm``) as a ``strptime``
    format; letters other than y M d H h m s S a E Z X are refused."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            end = pattern.find("'", i + 1)
            if end == -1:
                raise InvalidDefinition(
                    f"{at}: date pattern {pattern!r} has an open quote", node_id
                )
            out.append("'" if end == i + 1 else pattern[i + 1 : end].replace("%", "%%"))
            i = end + 1
            continue
        run = len(pattern) - i - len(pattern[i:].lstrip(ch)) if ch.isalpha() else 1
        if ch.isalpha():
            reading = _PATTERN_LETTERS.get(ch, {}).get(run)
            if reading is None:
                raise InvalidDefinition(
                    f"{at}: date pattern {pattern!r} uses {ch * run!r}, which bpm cannot read "
                    f"(it reads y, M, d, H, h, m, s, S, a, E, Z and X)",
                    node_id,
                )
            out.append(reading)
        else:
            out.append("%%" if ch == "%" else ch)
        i += run
    return "".join(out)


def _rules(raw: Any, kind: str, at: str, node_id: str) -> dict[Rule, Any]:
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{at}: 'validation' must be an object of rule -> config", node_id)
    known = ", ".join(r.value for r in Rule)
    allowed = (*FLAGS, *_TYPED_RULES.get(kind, (*LENGTHS, *BOUNDS)))
    rules: dict[Rule, Any] = {}
    for name, config in raw.items():
        try:
            rule = Rule(name)
        except ValueError:
            raise InvalidDefinition(
                f"{at}: unknown constraint {name!r} (known: {known})", node_id
            ) from None
        if rule not in allowed:
            raise InvalidDefinition(
                f"{at}: constraint {name!r} does not apply to a {kind} field", node_id
            )
        rules[rule] = _config(rule, config, kind, at, node_id)
    for low, high in (LENGTHS, BOUNDS):
        if low in rules and high in rules and rules[low] > rules[high]:
            raise InvalidDefinition(
                f"{at}: {low} {rules[low]} is above {high} {rules[high]}", node_id
            )
    return rules


def _config(rule: Rule, config: Any, kind: str, at: str, node_id: str) -> Any:
    if rule in FLAGS:
        if config is not True:
            raise InvalidDefinition(f"{at}: constraint {rule!r} takes true", node_id)
        return True
    whole = isinstance(config, int) and not isinstance(config, bool)
    if rule in LENGTHS and not (whole and config >= 0):
        raise InvalidDefinition(f"{at}: constraint {rule!r} needs a whole number >= 0", node_id)
    number = whole or isinstance(config, float)
    if rule in BOUNDS and not (whole if kind == FieldType.LONG else number):
        wanted = "a whole number" if kind == FieldType.LONG else "a number"
        raise InvalidDefinition(f"{at}: constraint {rule!r} needs {wanted}", node_id)
    return config


def _default(raw: Any, kind: str, at: str, node_id: str) -> Any:
    """A literal default of the field's type, or one ``${...}`` expression evaluated when
    the form is shown (a task created, a start checked)."""
    if raw is None:
        return None
    if isinstance(raw, str) and "${" in raw:
        try:
            if _WRAPPED.fullmatch(raw) and len(_PART.findall(raw)) <= 1:
                return compile_expression(raw, where=at, kind="defaultValue expression")
            # text around ${...} parts ("${first} ${last}"): a JUEL composite, always text
            return composite(raw, at, "defaultValue expression")
        except InvalidExpression as exc:
            raise InvalidDefinition(str(exc), node_id) from exc
    value = literal_default(raw, kind)
    if value is None:
        raise InvalidDefinition(f"{at}: defaultValue {raw!r} is not a {kind} value", node_id)
    return value


def literal_default(raw: Any, kind: str) -> Any:
    """A default as the field's type reads it (text ``"5"`` is 5 for a long field, ``"true"``
    true and any other text false for a boolean one), or None when it is none of that
    type."""
    if kind == FieldType.LONG:
        if isinstance(raw, str) and re.fullmatch(r"-?\d+", raw.strip()):
            return int(raw)
        return raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if kind == FieldType.BOOLEAN:
        # Text reads as Camunda 7's boolean form type reads it: true when it is "true" in
        # any case, false for any other text ("False", "no", "testdrive").
        if isinstance(raw, str):
            return raw.strip().lower() == "true"
        return raw if isinstance(raw, bool) else None
    if kind in (FieldType.STRING, FieldType.DATE, FieldType.ENUM):
        return raw if isinstance(raw, str) else None
    return raw
