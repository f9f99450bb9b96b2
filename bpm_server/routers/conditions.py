"""``POST /condition``: Camunda's ``evaluateConditions``. The variables given are evaluated
against the conditional start events of the latest version of every process (or of one
definition, ``processDefinitionId``); each whose condition holds starts an instance. The
answer lists them, as Camunda's ``ProcessInstanceDto`` list (docs/http-api.md)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from bpm.api import InvalidRequest
from bpm_server.instance_models import ProcessInstanceDto, instance_dto
from bpm_server.models import Dto, Name, VariableMap, wire
from bpm_server.routers.process_definitions import definition_by_id
from bpm_server.routing import Starter
from bpm_server.runtime import base_of, runtime_of
from bpm_server.variables import decode_variables

router = APIRouter(tags=["Condition"])


class EvaluationConditionDto(Dto):
    variables: VariableMap | None = None
    business_key: Name | None = None
    process_definition_id: str | None = None
    tenant_id: str | None = None
    without_tenant_id: bool | None = None


@router.post("/condition", response_model=list[ProcessInstanceDto])
def evaluate_conditions(
    body: EvaluationConditionDto, request: Request, caller: Starter
) -> list[ProcessInstanceDto]:
    """Start an instance at each conditional start event whose condition holds. A
    credential limited to some processes names its definition (it may start only those)."""
    if body.tenant_id is not None:
        raise InvalidRequest("tenantId: bpm has no tenants")
    runtime = runtime_of(request)
    definition_id = None
    if body.process_definition_id is not None:
        row = definition_by_id(request, body.process_definition_id)
        definition_id = row.id
        caller.check_process(row.key, "start", given=body.process_definition_id)
    elif caller.processes is not None:
        raise InvalidRequest(
            f"{caller.name} may start some processes only: name one (processDefinitionId)"
        )
    values = decode_variables(wire(body.variables))
    started = runtime.run(
        lambda: runtime.engine.evaluate_conditions(
            values, business_key=body.business_key, definition_id=definition_id
        )
    )
    out = []
    for one in started:
        shown = runtime.engine.show(one.id)
        out.append(
            ProcessInstanceDto(
                **instance_dto(
                    base_of(request),
                    str(one.id),
                    shown["definition_id"],
                    one.key,
                    one.business_key,
                    shown["state"] != "RUNNING",
                )
            )
        )
    return out
