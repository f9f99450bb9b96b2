"""``/deployment``: deploying files as Camunda Modeler's Deploy button sends them, and
reading deployments and their files back (docs/http-api.md lists the differences)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from bpm.api import (
    DeploymentQuery,
    DeploymentResult,
    DeploymentRow,
    Engine,
    InvalidRequest,
    Resource,
    kind_of,
)
from bpm_server.browsers import UNTRUSTED_CONTENT
from bpm_server.definition_models import (
    DeploymentDto,
    DeploymentWithDefinitionsDto,
    ResourceDto,
    decision_dto,
    definition_dto,
    deployment_dto,
    resource_dto,
)
from bpm_server.ids import maybe_uuid
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.query_params import Kind, QuerySpec, declare, only_params
from bpm_server.routing import Operator, Reader
from bpm_server.runtime import base_of, runtime_of

router = APIRouter(prefix="/deployment", tags=["Deployment"])

#: The form's text parts; every other part is a file and must carry a filename.
TEXT_PARTS = {
    "deployment-name",
    "enable-duplicate-filtering",
    "deploy-changed-only",
    "deployment-source",
    "tenant-id",
    "deployment-activation-time",
}
#: Content types of a file's data by its suffix, as Camunda serves them.
MEDIA = {
    ".bpmn": "application/xml",
    ".dmn": "application/xml",
    ".xml": "application/xml",
    ".cmmn": "application/xml",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".form": "application/json",
    ".html": "text/html",
    ".txt": "text/plain",
}


@router.post("/create", response_model=DeploymentWithDefinitionsDto)
async def create(request: Request, caller: Operator) -> DeploymentWithDefinitionsDto:
    """A multipart form of text parts and files; the files are one deployment, all or
    nothing. ``deploy-changed-only`` / ``enable-duplicate-filtering`` with nothing changed
    answer the deployment the files came from, with null definition maps."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise InvalidRequest("POST /deployment/create takes a multipart/form-data body")
    texts: dict[str, str] = {}
    files: list[Resource] = []
    form = await request.form()
    try:
        for field, value in form.multi_items():
            if isinstance(value, UploadFile) and value.filename:
                data = await value.read()
                files.append(Resource(value.filename, data, kind_of(value.filename)))
            elif field in TEXT_PARTS and isinstance(value, str):
                texts[field] = value
            else:
                raise InvalidRequest(
                    f"form part {field!r} is neither one of {', '.join(sorted(TEXT_PARTS))}"
                    " nor a file with a filename"
                )
    finally:
        await form.close()
    if texts.get("tenant-id"):
        raise InvalidRequest("tenant-id: bpm has no tenants; deploy without one")
    if texts.get("deployment-activation-time"):
        raise InvalidRequest(
            "deployment-activation-time: bpm cannot suspend definitions until a time"
        )
    if not files:
        raise InvalidRequest("No deployment resources contained in the form upload.")
    changed_only = _flag(texts, "deploy-changed-only")
    filtered = _flag(texts, "enable-duplicate-filtering")
    name, source = texts.get("deployment-name"), texts.get("deployment-source")
    engine = runtime_of(request).engine

    def deploy() -> DeploymentResult:
        return engine.deploy_files(
            files,
            name=name,
            source=source,
            changed_only=changed_only,
            filter_duplicates=filtered,
        )

    result = await run_in_threadpool(deploy)
    if result.deployment is None:
        raise InvalidRequest("nothing changed, and no earlier deployment holds these files")
    processes = decisions = None
    if result.created:
        view = await run_in_threadpool(engine.deployment, result.deployment.id)
        processes = {str(d.id): definition_dto(d) for d in view.processes} or None
        decisions = {str(d.id): decision_dto(d) for d in view.decisions} or None
    return DeploymentWithDefinitionsDto(
        **deployment_dto(base_of(request), result.deployment),
        deployed_process_definitions=processes,
        deployed_decision_definitions=decisions,
    )


def _flag(texts: dict[str, str], name: str) -> bool:
    value = texts.get(name, "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidRequest(f"{name}: {texts[name]!r} is not true or false")
    return value == "true"


def deployment_query(f: Mapping[str, Any]) -> DeploymentQuery | None:
    """None: the filter names no deployment (an id that is not a bpm id)."""
    found = None if "id" not in f else maybe_uuid(f["id"])
    if "id" in f and found is None:
        return None
    return DeploymentQuery(
        id=found,
        name=f.get("name"),
        name_like=f.get("nameLike"),
        source=f.get("source"),
        after=f.get("after"),
        before=f.get("before"),
    )


DEPLOYMENTS: ListResource[DeploymentQuery, DeploymentRow] = ListResource(
    QuerySpec(
        "deployment",
        {
            "id": Kind.TEXT,
            "name": Kind.TEXT,
            "nameLike": Kind.TEXT,
            "source": Kind.TEXT,
            "after": Kind.DATE,
            "before": Kind.DATE,
        },
        {"id": "id", "name": "name", "deploymentTime": "deploymentTime", "tenantId": None},
        {
            "tenantIdIn": "bpm has no tenants",
            "withoutTenantId": "bpm has no tenants",
            "includeDeploymentsWithoutTenantId": "bpm has no tenants",
        },
    ),
    deployment_query,
    Engine.find_deployments,
    Engine.count_deployments,
    lambda request, row: DeploymentDto(**deployment_dto(base_of(request), row)),
    DeploymentDto,
)
add_list_routes(router, "", DEPLOYMENTS, post=False)


@router.get("/{deployment_id}", response_model=DeploymentDto)
def get_deployment(deployment_id: str, request: Request, caller: Reader) -> DeploymentDto:
    view = runtime_of(request).engine.deployment(deployment_id)
    return DeploymentDto(**deployment_dto(base_of(request), view.deployment))


@router.get("/{deployment_id}/resources", response_model=list[ResourceDto])
def list_resources(deployment_id: str, request: Request, caller: Reader) -> list[ResourceDto]:
    view = runtime_of(request).engine.deployment(deployment_id)
    return [resource_dto(r) for r in view.resources]


@router.get("/{deployment_id}/resources/{resource_id}", response_model=ResourceDto)
def get_resource(
    deployment_id: str, resource_id: str, request: Request, caller: Reader
) -> ResourceDto:
    view = runtime_of(request).engine.deployment(deployment_id)
    for r in view.resources:
        if str(r.id) == resource_id:
            return resource_dto(r)
    runtime_of(request).engine.deployment_resource(deployment_id, resource_id)  # raises 404
    raise AssertionError("unreachable")


@router.get("/{deployment_id}/resources/{resource_id}/data", response_class=Response)
def resource_data(
    deployment_id: str, resource_id: str, request: Request, caller: Reader
) -> Response:
    """The file byte for byte, with a content type by its suffix."""
    engine = runtime_of(request).engine
    data = engine.deployment_resource(deployment_id, resource_id)
    name = next(
        (r.name for r in engine.deployment(deployment_id).resources if str(r.id) == resource_id),
        "resource",
    )
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    media = MEDIA.get(suffix, "application/octet-stream")
    # The header is Latin-1: an ASCII stand-in for old clients, the name itself in filename*.
    plain = name.encode("ascii", "replace").decode().replace('"', "").replace("?", "_")
    disposition = f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"
    headers = {"Content-Disposition": disposition, **UNTRUSTED_CONTENT}
    return Response(data, media_type=media, headers=headers)


@router.delete(
    "/{deployment_id}",
    status_code=204,
    response_class=Response,
    openapi_extra=declare({"skipCustomListeners", "skipIoMappings"}),
)
def delete_deployment(
    deployment_id: str,
    request: Request,
    caller: Operator,
    cascade: bool = False,
) -> Response:
    """Only a deployment no instance was started from (400 otherwise); ``cascade=true`` is
    refused: bpm does not delete instances and their history with a deployment."""
    only_params(request, {"cascade", "skipCustomListeners", "skipIoMappings"})
    if cascade:
        raise InvalidRequest(
            "cascade=true: bpm does not delete process instances with their deployment"
        )
    runtime_of(request).engine.delete_deployment(deployment_id)
    return Response(status_code=204)
