"""The bodies of the deployment and process-definition endpoints (Camunda 7's DeploymentDto,
DeploymentWithDefinitionsDto, ProcessDefinitionDto, DecisionDefinitionDto, ...).

A process definition's id is bpm's definition id (a UUID, the one fetched external tasks
carry as ``processDefinitionId``); Camunda's ``key:version:uuid`` form is accepted wherever an
id is read, and names the same definition when its key and version agree.
"""

from __future__ import annotations

import math
import re
from typing import Any
from uuid import UUID

from bpm.api import DecisionRow, DefinitionRow, DeploymentRow, ResourceRow
from bpm_server.dates import format_date
from bpm_server.models import INT_MAX, Dto

_DIGITS = re.compile(r"[0-9]+")

DAY = 86_400


class LinkDto(Dto):
    method: str
    href: str
    rel: str


class DeploymentDto(Dto):
    links: list[LinkDto]
    id: str
    name: str | None
    source: str | None
    deployment_time: str | None
    tenant_id: str | None = None


class ProcessDefinitionDto(Dto):
    id: str
    key: str
    category: str | None
    description: str | None
    name: str | None
    version: int
    resource: str | None
    deployment_id: str | None
    diagram: str | None = None
    suspended: bool = False
    tenant_id: str | None = None
    version_tag: str | None
    history_time_to_live: int | None
    startable_in_tasklist: bool = True


class DecisionDefinitionDto(Dto):
    id: str
    key: str
    category: str | None = None
    name: str | None
    version: int
    resource: str | None
    deployment_id: str | None
    tenant_id: str | None = None
    decision_requirements_definition_id: str | None = None
    decision_requirements_definition_key: str | None = None
    history_time_to_live: int | None = None
    version_tag: str | None


class DeploymentWithDefinitionsDto(DeploymentDto):
    deployed_process_definitions: dict[str, ProcessDefinitionDto] | None
    deployed_case_definitions: None = None
    deployed_decision_definitions: dict[str, DecisionDefinitionDto] | None
    deployed_decision_requirements_definitions: None = None


class ResourceDto(Dto):
    id: str
    name: str
    deployment_id: str


class ProcessDefinitionXmlDto(Dto):
    id: str
    bpmn20_xml: str


def definition_uuid(text: str) -> tuple[UUID | None, str | None, int | None]:
    """The UUID in a definition id (bare, or Camunda's ``key:version:uuid``), with the key
    and version the long form names; (None, ...) when it holds no UUID."""
    key: str | None = None
    version: int | None = None
    tail = text
    if text.count(":") >= 2:
        head, _, tail = text.rpartition(":")
        key_part, _, version_part = head.rpartition(":")
        key = key_part
        # ASCII digits only ("²".isdigit() is true, int("²") fails), and a Java int.
        fits = _DIGITS.fullmatch(version_part) and int(version_part) <= INT_MAX
        version = int(version_part) if fits else -1
    try:
        return UUID(tail), key, version
    except ValueError:
        return None, key, version


def deployment_dto(base: str, row: DeploymentRow) -> dict[str, Any]:
    href = f"{base}/deployment/{row.id}"
    return {
        "links": [LinkDto(method="GET", href=href, rel="self")],
        "id": str(row.id),
        "name": row.name,
        "source": row.source,
        "deployment_time": format_date(row.deployment_time),
    }


def definition_dto(row: DefinitionRow) -> ProcessDefinitionDto:
    graph = row.graph
    documentation = graph.get("documentation")
    ttl = row.history_ttl_seconds
    return ProcessDefinitionDto(
        id=str(row.id),
        key=row.key,
        category=None,  # bpm keeps no target namespace
        description=documentation if isinstance(documentation, str) else None,
        name=row.name,
        version=row.version,
        resource=row.resource,
        deployment_id=None if row.deployment_id is None else str(row.deployment_id),
        version_tag=row.version_tag,
        history_time_to_live=None if ttl is None else math.ceil(ttl / DAY),
        startable_in_tasklist=graph.get("startableInTasklist", True) is not False,
    )


def decision_dto(row: DecisionRow) -> DecisionDefinitionDto:
    return DecisionDefinitionDto(
        id=str(row.id),
        key=row.key,
        name=row.name,
        version=row.version,
        resource=row.resource,
        deployment_id=None if row.deployment_id is None else str(row.deployment_id),
        version_tag=row.version_tag,
    )


def resource_dto(row: ResourceRow) -> ResourceDto:
    return ResourceDto(id=str(row.id), name=row.name, deployment_id=str(row.deployment_id))
