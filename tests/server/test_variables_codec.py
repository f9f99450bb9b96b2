"""The typed-variable codec and the error mapping, without a server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fastapi.exceptions import RequestValidationError

from bpm.errors import (
    BadVariables,
    BpmError,
    Forbidden,
    InvalidRequest,
    LockExpired,
    NotAuthenticated,
    TaskNotFound,
    UnknownProcess,
    WrongWorker,
)
from bpm_server.dates import format_date, parse_date
from bpm_server.problems import status_of, validation_message
from bpm_server.variables import decode_variables, encode_value, encode_variables


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        ({"type": "String", "value": "x"}, "x"),
        ({"type": "string", "value": "x"}, "x"),
        ({"type": "Integer", "value": 5}, 5),
        ({"type": "integer", "value": "5"}, 5),
        ({"type": "Long", "value": 2**40}, 2**40),
        ({"type": "Short", "value": 7}, 7),
        ({"type": "Double", "value": 1.5}, 1.5),
        ({"type": "double", "value": 2}, 2.0),
        ({"type": "Boolean", "value": True}, True),
        ({"type": "boolean", "value": "false"}, False),
        ({"type": "Null", "value": None}, None),
        ({"type": "Integer", "value": None}, None),
        ({"type": "Json", "value": '{"a": [1, 2]}'}, {"a": [1, 2]}),
        ({"type": "json", "value": "[1]"}, [1]),
        (
            {
                "type": "Object",
                "value": '{"k": 1}',
                "valueInfo": {
                    "objectTypeName": "java.util.HashMap",
                    "serializationDataFormat": "application/json",
                },
            },
            {"k": 1},
        ),
        ({"type": "Date", "value": "2026-01-02T03:04:05.000+0000"}, "2026-01-02T03:04:05.000+0000"),
        ({"type": "date", "value": "2026-01-02T04:04:05.123+0100"}, "2026-01-02T03:04:05.123+0000"),
        ({"value": 7}, 7),
        ({"value": {"a": [1, 2]}}, {"a": [1, 2]}),
        ({"value": None}, None),
    ],
)
def test_typed_values_read_as_json_values(typed: dict[str, Any], value: Any) -> None:
    assert decode_variables({"v": typed}) == {"v": value}


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        (
            {
                "type": "Object",
                "value": "rO0AB",
                "valueInfo": {"serializationDataFormat": "application/x-java-serialized-object"},
            },
            "Java-serialized object is refused",
        ),
        (
            {
                "type": "Object",
                "value": "<a/>",
                "valueInfo": {"serializationDataFormat": "application/xml"},
            },
            "not supported",
        ),
        ({"type": "Bytes", "value": "AAA="}, "not supported"),
        ({"type": "File", "value": "AAA="}, "not supported"),
        ({"type": "Integer", "value": "five"}, "is not an integer"),
        ({"type": "Integer", "value": 2**31}, "does not fit"),
        ({"type": "Boolean", "value": 1}, "not a boolean"),
        ({"type": "Json", "value": {"a": 1}}, "must be its JSON text"),
        ({"type": "Json", "value": "{nope"}, "not JSON text"),
        ({"type": "Date", "value": "02.01.2026"}, "yyyy-MM-dd"),
        ({"type": "Weird", "value": 1}, "unknown value type 'Weird': the types are String,"),
        ({"type": "Strng", "value": "x"}, "did you mean 'String'"),
    ],
)
def test_refused_values_say_why(typed: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidRequest, match=says):
        decode_variables({"v": typed})


def test_transient_variables_are_not_stored() -> None:
    assert (
        decode_variables({"t": {"value": 1, "type": "Integer", "valueInfo": {"transient": True}}})
        == {}
    )


def test_every_written_value_has_a_string_type() -> None:
    out = encode_variables(
        {"s": "x", "i": 3, "l": 2**40, "d": 1.5, "b": False, "n": None, "o": {"a": [1]}, "a": [1]}
    )
    assert {k: v["type"] for k, v in out.items()} == {
        "s": "String",
        "i": "Integer",
        "l": "Long",
        "d": "Double",
        "b": "Boolean",
        "n": "Null",
        "o": "Json",
        "a": "Json",
    }
    assert out["o"]["value"] == '{"a":[1]}' and all(v["valueInfo"] == {} for v in out.values())
    assert decode_variables(out) == {
        "s": "x",
        "i": 3,
        "l": 2**40,
        "d": 1.5,
        "b": False,
        "n": None,
        "o": {"a": [1]},
        "a": [1],
    }
    assert encode_value(True)["type"] == "Boolean"  # not an Integer


def test_dates_in_camunda_form() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
    assert format_date(when) == "2026-01-02T03:04:05.006+0000"
    assert format_date(None) is None
    assert parse_date("2026-01-02T03:04:05.006+0000") == when
    assert parse_date("2026-01-02T05:04:05.006+02:00") == when
    assert parse_date("2026-01-02T03:04:05Z") == when.replace(microsecond=0)
    assert parse_date("1970-01-01T00:00:00.000-0130").utcoffset() == -timedelta(hours=1, minutes=30)
    assert format_date(datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))) == (
        "2026-01-02T03:04:05.000+0000"
    )


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (NotAuthenticated("x"), 401, "AuthenticationException"),
        (Forbidden("x"), 403, "AuthorizationException"),
        (TaskNotFound("x"), 404, "RestException"),
        (UnknownProcess("x"), 404, "RestException"),
        (WrongWorker("x"), 400, "RestException"),
        (LockExpired("x"), 400, "RestException"),
        (InvalidRequest("x"), 400, "InvalidRequestException"),
        (BadVariables("x"), 400, "InvalidRequestException"),
        (BpmError("x"), 500, "ProcessEngineException"),
    ],
)
def test_bpm_errors_map_to_camunda_statuses(error: BpmError, status: int, kind: str) -> None:
    assert status_of(error) == (status, kind)


def test_a_validation_error_names_its_field() -> None:
    exc = RequestValidationError(
        [{"loc": ("body", "topics", 0, "lockDuration"), "msg": "Field required", "type": "missing"}]
    )
    assert validation_message(exc) == "topics[0].lockDuration: Field required"


def test_a_plain_value_is_refused_with_the_typed_object_meant() -> None:
    with pytest.raises(InvalidRequest, match=r"variable .amount.: a variable is an object") as e:
        decode_variables({"amount": 5})
    assert '{"value": 5, "type": "Integer"}' in str(e.value)
