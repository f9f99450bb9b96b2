"""Request and response bodies shared by the routers, in Camunda's camelCase.

Unknown properties are ignored and explicit nulls read as absent, as Camunda reads them: the
official clients send both. The OpenAPI document is made from these same models.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from bpm.api import ERROR_DETAILS_MAX, ERROR_MESSAGE_MAX, NAME_MAX
from bpm_server.variables import not_typed

#: Camunda's Java ``int`` (paging, retries, priorities): larger numbers are a 400, not a
#: database overflow.
INT_MAX = 2**31 - 1
#: The longest duration (lock, retry timeout) bpm accepts, in milliseconds: ten years. Java's
#: ``long`` goes further, but a lock that outlives the calendar is a mistake, not a request.
MAX_DURATION_MS = 10 * 365 * 24 * 3600 * 1000

JavaInt = Annotated[int, Field(ge=-INT_MAX - 1, le=INT_MAX)]
Count = Annotated[int, Field(ge=0, le=INT_MAX)]
Millis = Annotated[int, Field(ge=0, le=MAX_DURATION_MS, description="milliseconds")]
PositiveMillis = Annotated[int, Field(gt=0, le=MAX_DURATION_MS, description="milliseconds")]
#: A name or key a client stores or matches on (``bpm.limits``): a worker id, a business or
#: idempotency key, a message name, a topic.
Name = Annotated[str, Field(max_length=NAME_MAX)]
NonEmptyName = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
ErrorMessage = Annotated[str, Field(max_length=ERROR_MESSAGE_MAX)]
ErrorDetails = Annotated[str, Field(max_length=ERROR_DETAILS_MAX)]


class Dto(BaseModel):
    """Base of every body: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        """PostgreSQL cannot store NUL in text: refused as the field's error, not a 500."""
        where = nul_at(data, "")
        if where is not None:
            raise ValueError(
                f"{where or 'body'}: a text may not contain the NUL character (\\u0000),"
                " which PostgreSQL cannot store"
            )
        return data


def nul_at(value: Any, where: str) -> str | None:
    """The path of the first string in ``value`` (keys included) holding a NUL, if any."""
    if isinstance(value, str):
        return where if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and "\x00" in key:
                return inner
            found = nul_at(item, inner)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = nul_at(item, f"{where}[{i}]")
            if found is not None:
                return found
    return None


class VariableValueDto(Dto):
    """A typed value (``bpm_server.variables``); ``type`` may be absent (untyped)."""

    value: Any = None
    type: str | None = None
    value_info: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _typed(cls, data: Any) -> Any:
        """A plain value where a typed one belongs (``{"amount": 5}``) is the commonest
        mistake of a first request: the error shows the object that was meant."""
        if not isinstance(data, dict):
            raise ValueError(not_typed(data))
        return data


VariableMap = dict[str, VariableValueDto]


def wire(variables: VariableMap | None) -> dict[str, Any] | None:
    """A parsed variable map back as plain JSON, for ``decode_variables``."""
    if variables is None:
        return None
    return {name: v.model_dump(by_alias=True) for name, v in variables.items()}


class CountDto(Dto):
    """What every ``/count`` answers."""

    count: int


class WithoutNullVariables(Dto):
    """A body whose ``variables`` are there only when asked for: Camunda leaves the key out
    otherwise, and clients that read it as a map fail on a ``null`` (pycamunda)."""

    variables: dict[str, dict[str, Any]] | None = None

    @model_serializer(mode="wrap")
    def _drop_null_variables(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if out.get("variables", ...) is None:
            del out["variables"]
        return out
