"""The forms of tasks and start events as Camunda serves them: ``/task/{id}/deployed-form``,
and per process definition (by id or ``key/{key}``) ``/startForm``, ``/form-variables`` and
``/deployed-start-form`` (docs/http-api.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response

from bpm.api import DefinitionRow, DeployedForm
from bpm_server.routers.process_definitions import definition_by_id, definition_by_key
from bpm_server.routing import Reader, runtime_of
from bpm_server.task_models import FormDto, form_key, form_ref, typed_form_value

router = APIRouter(tags=["Forms"])
Names = Query(None, alias="variableNames")


def _file(found: DeployedForm) -> Response:
    """The file as deployed, byte for byte; a browser may not run it as a page of ours."""
    return Response(
        found.content,
        media_type=found.media_type,
        headers={"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"},
    )


@router.get("/task/{task_id}/deployed-form", response_class=Response)
def task_deployed_form(task_id: str, request: Request, caller: Reader) -> Response:
    engine = runtime_of(request).engine
    view = engine.user_task(task_id)
    return _file(engine.deployed_form(view.form, view.definition_id))


def _row(request: Request, ref: str, by_key: bool) -> DefinitionRow:
    return definition_by_key(request, ref) if by_key else definition_by_id(request, ref)


def _start_form(request: Request, row: DefinitionRow) -> FormDto:
    form = runtime_of(request).engine.start_form(row.id).form
    return FormDto(key=form_key(form), camunda_form_ref=form_ref(form))


def _form_variables(
    request: Request, row: DefinitionRow, names: str | None
) -> dict[str, dict[str, Any]]:
    """The start form's fields with their defaults, typed by the field."""
    wanted = None if names is None else {n for n in names.split(",") if n}
    values = runtime_of(request).engine.start_form(row.id).values
    return {
        v.name: typed_form_value(v.value, v.type)
        for v in values
        if wanted is None or v.name in wanted
    }


def _deployed_start_form(request: Request, row: DefinitionRow) -> Response:
    engine = runtime_of(request).engine
    return _file(engine.deployed_form(engine.start_form(row.id).form, row.id))


def _add_routes(prefix: str, by_key: bool) -> None:
    """The three start-form reads under ``prefix``, naming the definition by key or by id."""

    def start_form(ref: str, request: Request, caller: Reader) -> FormDto:
        return _start_form(request, _row(request, ref, by_key))

    def form_variables(
        ref: str, request: Request, caller: Reader, variable_names: str | None = Names
    ) -> dict[str, dict[str, Any]]:
        return _form_variables(request, _row(request, ref, by_key), variable_names)

    def deployed_start_form(ref: str, request: Request, caller: Reader) -> Response:
        return _deployed_start_form(request, _row(request, ref, by_key))

    name = "by_key" if by_key else "by_id"
    router.add_api_route(
        f"{prefix}/startForm", start_form, response_model=FormDto, name=f"start_form_{name}"
    )
    router.add_api_route(f"{prefix}/form-variables", form_variables, name=f"form_variables_{name}")
    router.add_api_route(
        f"{prefix}/deployed-start-form",
        deployed_start_form,
        response_class=Response,
        name=f"deployed_start_form_{name}",
    )


_add_routes("/process-definition/key/{ref}", by_key=True)
_add_routes("/process-definition/{ref}", by_key=False)
