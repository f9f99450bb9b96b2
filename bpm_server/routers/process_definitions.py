"""``/process-definition``: deployed definitions, their BPMN XML, and starting instances
(docs/http-api.md lists the differences from Camunda 7)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request

from bpm.api import (
    LIVE_INSTANCE,
    NAME_MAX,
    DefinitionQuery,
    DefinitionRow,
    Engine,
    InvalidOperation,
    InvalidRequest,
    UnknownProcess,
)
from bpm_server.auth import Permission, Principal
from bpm_server.definition_models import (
    ProcessDefinitionDto,
    ProcessDefinitionXmlDto,
    definition_dto,
    definition_uuid,
)
from bpm_server.ids import uuids
from bpm_server.instance_models import ProcessInstanceWithVariablesDto, StartDto, instance_dto
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.models import INT_MAX, wire
from bpm_server.query_params import Kind, QuerySpec
from bpm_server.routing import Reader, Starter
from bpm_server.runtime import base_of, runtime_of
from bpm_server.variables import decode_variables, encode_variables

router = APIRouter(prefix="/process-definition", tags=["Process Definition"])
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=NAME_MAX)]


def definition_query(f: Mapping[str, Any]) -> DefinitionQuery | None:
    """None when the filters can match nothing (ids that are not bpm ids, ``active=false``:
    bpm never suspends a definition)."""
    if f.get("suspended"):
        raise InvalidRequest("suspended=true: bpm has no suspended process definitions")
    if f.get("active") is False:
        return None
    ids: list[str] | None = None
    if "processDefinitionId" in f or "processDefinitionIdIn" in f:
        ids = [*f.get("processDefinitionId", []), *f.get("processDefinitionIdIn", [])]
    deployment_ids = None if "deploymentId" not in f else uuids([f["deploymentId"]])
    if deployment_ids == []:
        return None
    version = f.get("version")
    if version is not None and not (re.fullmatch(r"[0-9]+", version) and int(version) <= INT_MAX):
        raise InvalidRequest(f"version: {version!r} is not a version number (1 to {INT_MAX})")
    return DefinitionQuery(
        ids=None if ids is None else [u for u, _, _ in map(definition_uuid, ids) if u],
        key=f.get("key"),
        keys=f.get("keysIn"),
        key_like=f.get("keyLike"),
        name=f.get("name"),
        name_like=f.get("nameLike"),
        version=None if version is None else int(version),
        latest_only=bool(f.get("latestVersion")),
        deployment_id=None if deployment_ids is None else deployment_ids[0],
        version_tag=f.get("versionTag"),
        version_tag_like=f.get("versionTagLike"),
        resource=f.get("resourceName"),
    )


DEFINITIONS: ListResource[DefinitionQuery, DefinitionRow] = ListResource(
    QuerySpec(
        "process definition",
        {
            "processDefinitionId": Kind.TEXTS,
            "processDefinitionIdIn": Kind.TEXTS,
            "key": Kind.TEXT,
            "keysIn": Kind.TEXTS,
            "keyLike": Kind.TEXT,
            "name": Kind.TEXT,
            "nameLike": Kind.TEXT,
            "version": Kind.TEXT,
            "latestVersion": Kind.BOOL,
            "deploymentId": Kind.TEXT,
            "resourceName": Kind.TEXT,
            "versionTag": Kind.TEXT,
            "versionTagLike": Kind.TEXT,
            "active": Kind.BOOL,
            "suspended": Kind.BOOL,
        },
        {
            "id": "id",
            "key": "key",
            "name": "name",
            "version": "version",
            "deploymentId": "deploymentId",
            "deployTime": "deployTime",
            "versionTag": "versionTag",
            "category": None,
            "tenantId": None,
        },
        {
            "tenantIdIn": "bpm has no tenants",
            "withoutTenantId": "bpm has no tenants",
            "includeProcessDefinitionsWithoutTenantId": "bpm has no tenants",
        },
    ),
    definition_query,
    Engine.find_process_definitions,
    Engine.count_process_definitions,
    lambda request, row: definition_dto(row),
    ProcessDefinitionDto,
)
add_list_routes(router, "", DEFINITIONS, post=False)


def definition_by_id(request: Request, definition_id: str) -> DefinitionRow:
    """By bpm's id or Camunda's ``key:version:uuid`` (whose key and version must agree)."""
    found, key, version = definition_uuid(definition_id)
    row = None
    if found is not None:
        try:
            row = runtime_of(request).engine.process_definition(found)
        except UnknownProcess:
            row = None
    if row is None or (key is not None and (row.key, row.version) != (key, version)):
        raise UnknownProcess(f"No matching definition with id {definition_id}")
    return row


def definition_by_key(request: Request, key: str) -> DefinitionRow:
    try:
        return runtime_of(request).engine.process_definition(key=key)
    except UnknownProcess:
        raise UnknownProcess(
            f"No matching process definition with key: {key} and no tenant-id"
        ) from None


@router.get("/key/{key}", response_model=ProcessDefinitionDto)
def get_by_key(key: str, request: Request, caller: Reader) -> ProcessDefinitionDto:
    """The latest version of ``key``."""
    return definition_dto(definition_by_key(request, key))


@router.get("/key/{key}/xml", response_model=ProcessDefinitionXmlDto)
def xml_by_key(key: str, request: Request, caller: Reader) -> ProcessDefinitionXmlDto:
    return _xml(request, definition_by_key(request, key))


@router.post("/key/{key}/start", response_model=ProcessInstanceWithVariablesDto)
@router.post("/key/{key}/submit-form", response_model=ProcessInstanceWithVariablesDto)
def start_by_key(
    key: str,
    request: Request,
    caller: Starter,
    body: StartDto | None = None,
    idempotency_key: IdempotencyKey = None,
) -> ProcessInstanceWithVariablesDto:
    """Start the latest version of ``key``; no body is a start without variables. By
    ``submit-form`` the variables submit the start form (checked, defaults filled, its
    business key field read); a plain start checks nothing, as in Camunda."""
    caller.check_process(key)
    row = definition_by_key(request, key)
    body = body or StartDto()
    return _start(request, caller, row, body, idempotency_key, None, _submits(request))


@router.get("/{definition_id}", response_model=ProcessDefinitionDto)
def get_definition(definition_id: str, request: Request, caller: Reader) -> ProcessDefinitionDto:
    return definition_dto(definition_by_id(request, definition_id))


@router.get("/{definition_id}/xml", response_model=ProcessDefinitionXmlDto)
def xml_by_id(definition_id: str, request: Request, caller: Reader) -> ProcessDefinitionXmlDto:
    return _xml(request, definition_by_id(request, definition_id))


@router.post("/{definition_id}/start", response_model=ProcessInstanceWithVariablesDto)
@router.post("/{definition_id}/submit-form", response_model=ProcessInstanceWithVariablesDto)
def start_by_id(
    definition_id: str,
    request: Request,
    caller: Starter,
    body: StartDto | None = None,
    idempotency_key: IdempotencyKey = None,
) -> ProcessInstanceWithVariablesDto:
    """Start this very version; no body is a start without variables (``submit-form``:
    as for a key)."""
    row = definition_by_id(request, definition_id)
    caller.check_process(row.key, given=definition_id)
    body = body or StartDto()
    return _start(request, caller, row, body, idempotency_key, row.version, _submits(request))


def _submits(request: Request) -> bool:
    """Whether the start came by ``submit-form``: a submission of the start form."""
    return request.url.path.endswith("/submit-form")


def _xml(request: Request, row: DefinitionRow) -> ProcessDefinitionXmlDto:
    text, fmt = runtime_of(request).engine.definition_source(row.id)
    if fmt != "bpmn":
        raise InvalidOperation(
            f"process definition {row.id} was deployed as a bpm {fmt} document; it has no"
            " BPMN 2.0 XML"
        )
    return ProcessDefinitionXmlDto(id=str(row.id), bpmn20_xml=text)


def _start(
    request: Request,
    caller: Principal,
    row: DefinitionRow,
    body: StartDto,
    idempotency_key: str | None,
    version: int | None,
    submit_form: bool = False,
) -> ProcessInstanceWithVariablesDto:
    """Idempotent as every bpm start: the ``Idempotency-Key`` header, else the business
    key, names the start; sent again, it answers the instance the first one made. Its
    variables (``withVariablesInReturn``) are then a read of an instance someone else may have
    started, and are answered only to a role that reads; a new instance's go to its starter."""
    if body.case_instance_id is not None:
        raise InvalidRequest("caseInstanceId: bpm has no case instances")
    if body.start_instructions:
        raise InvalidRequest("startInstructions: bpm starts at the start event only")
    for name, given in (
        ("skipCustomListeners", body.skip_custom_listeners),
        ("skipIoMappings", body.skip_io_mappings),
    ):
        if given:
            raise InvalidRequest(f"{name}=true: bpm cannot skip them on a start")
    values = decode_variables(wire(body.variables))
    runtime = runtime_of(request)
    missing = runtime.missing(row.id)
    if missing:
        raise InvalidOperation(
            f"process {row.key!r} calls what no imported module registers: "
            f"{', '.join(missing)}; name the module that registers them in BPM_IMPORTS"
        )
    started = runtime.run(
        lambda: runtime.engine.start(
            row.key,
            values,
            business_key=body.business_key,
            idempotency_key=idempotency_key,
            version=version,
            submit_form=submit_form,
        )
    )
    shown = runtime.engine.show(started.id)
    ended = shown["state"] not in LIVE_INSTANCE
    out = ProcessInstanceWithVariablesDto(
        **instance_dto(
            base_of(request),
            shown["id"],
            shown["definition_id"],
            row.key,
            shown["business_key"],
            ended,
        )
    )
    if body.with_variables_in_return and (started.created or caller.can(Permission.READ)):
        out.variables = encode_variables(shown["variables"])
    return out
