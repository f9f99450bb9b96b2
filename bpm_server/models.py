"""Request and response bodies shared by the routers, in Camunda's camelCase.

Unknown properties are ignored and explicit nulls read as absent, as Camunda reads them: the
official clients send both. The OpenAPI document is made from these same models.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Dto(BaseModel):
    """Base of every body: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class VariableValueDto(Dto):
    """A typed value (``bpm_server.variables``); ``type`` may be absent (untyped)."""

    value: Any = None
    type: str | None = None
    value_info: dict[str, Any] | None = None


VariableMap = dict[str, VariableValueDto]


def wire(variables: VariableMap | None) -> dict[str, Any] | None:
    """A parsed variable map back as plain JSON, for ``decode_variables``."""
    if variables is None:
        return None
    return {name: v.model_dump(by_alias=True) for name, v in variables.items()}


class CountDto(Dto):
    """What every ``/count`` answers."""

    count: int
