"""Deployments and process definitions as the Camunda-compatible API reads them."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.errors import NotFound, UnknownProcess
from bpm.store import decisions, definition_queries, definitions, deployments
from bpm.store.decisions import DecisionRow
from bpm.store.definition_queries import DefinitionQuery
from bpm.store.deployments import DeploymentQuery, DeploymentRow, ResourceRow
from bpm.store.paging import Page
from bpm.store.rows import DefinitionRow


@dataclass(frozen=True)
class DeploymentView:
    deployment: DeploymentRow
    resources: list[ResourceRow]
    processes: list[DefinitionRow]
    decisions: list[DecisionRow]


def find_deployments(core: EngineCore, f: DeploymentQuery, page: Page) -> list[DeploymentRow]:
    with core.db.transaction() as conn:
        return deployments.find(conn, f, page)


def count_deployments(core: EngineCore, f: DeploymentQuery) -> int:
    with core.db.transaction() as conn:
        return deployments.count(conn, f)


def deployment(core: EngineCore, deployment_id: UUID) -> DeploymentView:
    with core.db.transaction() as conn:
        row = deployments.get(conn, deployment_id)
        if row is None:
            raise NotFound(f"deployment with id '{deployment_id}' does not exist")
        process_ids, _ = deployments.definition_ids(conn, deployment_id)
        processes = [d for d in (definitions.by_id(conn, i) for i in process_ids) if d]
        return DeploymentView(
            row,
            deployments.resources_of(conn, deployment_id),
            sorted(processes, key=lambda d: (d.key, d.version)),
            decisions.of_deployment(conn, deployment_id),
        )


def resource_data(core: EngineCore, deployment_id: UUID, resource_id: UUID) -> bytes:
    with core.db.transaction() as conn:
        found = deployments.content(conn, deployment_id, resource_id)
    if found is None:
        raise NotFound(
            f"deployment resource '{resource_id}' of deployment '{deployment_id}' does not exist"
        )
    return found


def find_definitions(core: EngineCore, f: DefinitionQuery, page: Page) -> list[DefinitionRow]:
    with core.db.transaction() as conn:
        return definition_queries.find(conn, f, page)


def count_definitions(core: EngineCore, f: DefinitionQuery) -> int:
    with core.db.transaction() as conn:
        return definition_queries.count(conn, f)


def definition_row(core: EngineCore, def_id: UUID | None, key: str | None = None) -> DefinitionRow:
    """By id, or the latest version of ``key``; ``UnknownProcess`` when there is none."""
    with core.db.transaction() as conn:
        if def_id is not None:
            row = definitions.by_id(conn, def_id)
        else:
            row = definitions.latest(conn, key or "")
    if row is None:
        which = f"id {def_id}" if def_id is not None else f"key {key!r}"
        raise UnknownProcess(f"no process definition with {which} is deployed")
    return row


def definition_source(core: EngineCore, def_id: UUID) -> tuple[str, str]:
    with core.db.transaction() as conn:
        found = definitions.source(conn, def_id)
    if found is None:
        raise UnknownProcess(f"no process definition with id {def_id} is deployed")
    return found
