"""The facade's read-only half: instances, their history and diagrams, incidents, open user
tasks and deployed definitions, as the views of ``bpm.engine.operations``. Nothing here
changes state, so nothing here names a cause."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Unpack
from uuid import UUID

from bpm.definitions import requirements
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.ids import as_id, maybe_id
from bpm.engine.operations import (
    definitions,
    deployment_views,
    event_subscriptions,
    external_views,
    history_views,
    incident_views,
    instance_counts,
    instance_views,
    metrics,
    queries,
    start_timers,
    statistics,
    task_views,
    user_tasks,
    variable_updates,
    views,
)
from bpm.engine.operations.deployment_views import DeploymentView
from bpm.engine.operations.event_subscriptions import EventSubscriptionQuery
from bpm.engine.operations.external_views import ExternalTaskView
from bpm.engine.operations.history_views import InstanceHistory, Visit, VisitQuery
from bpm.engine.operations.instance_views import ActivityTree
from bpm.engine.operations.metrics import MetricsSnapshot
from bpm.engine.operations.statistics import DefinitionStatistics, NodeStatistics
from bpm.engine.operations.task_views import FormValue, UserTaskView
from bpm.engine.operations.variable_updates import VariableUpdate, VariableUpdateQuery
from bpm.store.definition_queries import DefinitionQuery
from bpm.store.deployments import DeploymentQuery, DeploymentRow
from bpm.store.history_queries import FoundVariable, InstanceHistoryQuery, VariableQuery
from bpm.store.incident_queries import FoundIncident, IncidentQuery
from bpm.store.instance_counts import InstanceCounts
from bpm.store.instance_queries import LiveInstanceQuery
from bpm.store.job_queries import FoundJob, JobQuery
from bpm.store.paging import Page
from bpm.store.queries import InstanceFields, InstanceFilter
from bpm.store.rows import DefinitionRow, InstanceRow
from bpm.store.task_queries import ExternalTaskQuery
from bpm.store.user_task_queries import UserTaskQuery

#: The first rows of a list (``Page``'s default limit).
FIRST = Page()


class EngineReads:
    """Read-only views over the engine's core (``Engine`` inherits them)."""

    core: EngineCore

    def show(self, instance_id: UUID | str) -> dict[str, Any]:
        return views.show(self.core, as_id(instance_id, "instance"))

    def trace(self, instance_id: UUID | str) -> list[dict[str, Any]]:
        return views.trace(self.core, as_id(instance_id, "instance"))

    def diagram(self, instance_id: UUID | str, fmt: str = "mermaid") -> str:
        """The definition drawn with the path the instance took: ``"mermaid"`` text or an
        ``"svg"`` document (in the deployed BPMN's own layout when it has one:
        ``bpm.diagram_views``)."""
        return views.diagram(self.core, as_id(instance_id, "instance"), fmt)

    def find_instances(
        self, *, limit: int = 100, **filters: Unpack[InstanceFields]
    ) -> list[dict[str, Any]]:
        """Instances by definition (``key``, ``version``), ``business_key``, ``state``, the
        time range they were alive in (``since``, ``until``) and ``with_open_incidents``;
        newest first."""
        return queries.find_instances(self.core, InstanceFilter(**filters), limit)

    def history(
        self,
        *,
        instance_id: UUID | str | None = None,
        types: Sequence[str] = (),
        limit: int = 1000,
        **filters: Unpack[InstanceFields],
    ) -> list[dict[str, Any]]:
        """History rows of the instances ``find_instances`` would find, in write order."""
        found = InstanceFilter(instance_id=maybe_id(instance_id, "instance"), **filters)
        return queries.history(self.core, found, types=types, limit=limit)

    def incidents(self, limit: int = 100) -> list[dict[str, Any]]:
        return views.open_incidents(self.core, limit)

    def user_tasks(
        self,
        *,
        assignee: str | None = None,
        group: str | None = None,
        candidate_user: str | None = None,
        instance_id: UUID | str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Open user tasks, oldest first, optionally by assignee, candidate group, candidate
        user, instance (a task claimed by someone still lists under its candidates)."""
        iid = maybe_id(instance_id, "instance")
        return user_tasks.listing(
            self.core,
            assignee=assignee,
            group=group,
            candidate_user=candidate_user,
            instance_id=iid,
            limit=limit,
        )

    def definition(self, key: str, version: int | None = None) -> dict[str, Any]:
        """A deployed definition as people and tools read it: its properties, forms,
        documentation and who may start it, node by node (latest version unless given)."""
        return definitions.definition(self.core, key, version)

    def find_external_tasks(
        self, query: ExternalTaskQuery, page: Page = FIRST
    ) -> list[ExternalTaskView]:
        """Open external tasks (waiting, locked, failed), oldest first."""
        return external_views.find(self.core, query, page)

    def count_external_tasks(self, query: ExternalTaskQuery) -> int:
        return external_views.count(self.core, query)

    def external_task(self, task_id: UUID | str) -> ExternalTaskView:
        return external_views.get(self.core, as_id(task_id, "task"))

    def next_retry_due(self, topics: Sequence[str]) -> datetime | None:
        """When a failed task of ``topics`` waiting out its retry timeout comes due."""
        return external_views.next_retry_due(self.core, topics)

    # --- the HTTP API's lists: a query, a page (offset, limit, order) and a count --------

    def find_user_tasks(self, query: UserTaskQuery, page: Page = FIRST) -> list[UserTaskView]:
        """Open user tasks with their instance's facts and the node's name."""
        return task_views.find(self.core, query, page)

    def count_user_tasks(self, query: UserTaskQuery) -> int:
        return task_views.count(self.core, query)

    def find_task_history(self, query: UserTaskQuery, page: Page = FIRST) -> list[UserTaskView]:
        """User tasks open and ended (``query.states`` narrows them)."""
        return task_views.find_history(self.core, query, page)

    def count_task_history(self, query: UserTaskQuery) -> int:
        return task_views.count_history(self.core, query)

    def user_task(self, task_id: UUID | str) -> UserTaskView:
        return task_views.get(self.core, as_id(task_id, "task"))

    def user_task_form_values(
        self, task_id: UUID | str, names: Sequence[str] | None = None
    ) -> list[FormValue]:
        """The values the task's form shows (its fields; every variable without fields)."""
        return task_views.form_values(self.core, as_id(task_id, "task"), names)

    def user_task_variables(self, task_id: UUID | str) -> dict[str, Any]:
        """The variables an open user task's token sees."""
        return task_views.variables(self.core, as_id(task_id, "task"))

    def find_incidents(self, query: IncidentQuery, page: Page = FIRST) -> list[FoundIncident]:
        return incident_views.incidents(self.core, query, page)

    def count_incidents(self, query: IncidentQuery) -> int:
        return incident_views.count_incidents(self.core, query)

    def incident(self, incident_id: UUID | str, *, open_only: bool = True) -> FoundIncident:
        return incident_views.incident(
            self.core, as_id(incident_id, "incident"), open_only=open_only
        )

    def find_jobs(self, query: JobQuery, page: Page = FIRST) -> list[FoundJob]:
        """Open handler tasks and scheduled timers (Camunda's jobs)."""
        return incident_views.jobs(self.core, query, page)

    def event_subscriptions(self, instance_id: UUID | str) -> list[dict[str, Any]]:
        """The messages the instance listens for now: ``{id, event_type, event_name,
        token_id, instance_id, node_id, created_at}``."""
        return event_subscriptions.of_instance(self.core, as_id(instance_id, "instance"))

    def find_event_subscriptions(
        self, query: EventSubscriptionQuery, page: Page = FIRST
    ) -> list[dict[str, Any]]:
        return event_subscriptions.find(self.core, query, page)

    def count_event_subscriptions(self, query: EventSubscriptionQuery) -> int:
        return event_subscriptions.count(self.core, query)

    def scheduled_starts(self, key: str | None = None) -> list[dict[str, Any]]:
        """The timer start events armed now (of each key's latest version), next due
        first: ``{key, definition_id, node_id, fire_at, fired}``."""
        return start_timers.scheduled(self.core, key)

    def count_jobs(self, query: JobQuery) -> int:
        return incident_views.count_jobs(self.core, query)

    def job(self, job_id: UUID | str) -> FoundJob:
        return incident_views.job(self.core, as_id(job_id, "job"))

    def find_instance_history(
        self, query: InstanceHistoryQuery, page: Page = FIRST
    ) -> list[InstanceHistory]:
        """Instances running and ended (until retention deletes them)."""
        return history_views.find_instances(self.core, query, page)

    def count_instance_history(self, query: InstanceHistoryQuery) -> int:
        return history_views.count_instances(self.core, query)

    def instance_history(self, instance_id: UUID | str) -> InstanceHistory:
        return history_views.instance(self.core, as_id(instance_id, "instance"))

    def find_visits(self, query: VisitQuery, page: Page = FIRST) -> list[Visit]:
        """An instance's node visits (from its token history) that match."""
        return history_views.find_visits(self.core, query, page)

    def count_visits(self, query: VisitQuery) -> int:
        return history_views.count_visits(self.core, query)

    def find_variable_history(
        self, query: VariableQuery, page: Page = FIRST
    ) -> list[FoundVariable]:
        return history_views.find_variables(self.core, query, page)

    def count_variable_history(self, query: VariableQuery) -> int:
        return history_views.count_variables(self.core, query)

    def find_variable_updates(
        self, query: VariableUpdateQuery, page: Page = FIRST
    ) -> list[VariableUpdate]:
        """Each change of the named instances' variables, as written."""
        return variable_updates.find(self.core, query, page)

    def count_variable_updates(self, query: VariableUpdateQuery) -> int:
        return variable_updates.count(self.core, query)

    def find_variables(self, query: VariableQuery, page: Page = FIRST) -> list[FoundVariable]:
        """The variables of running and failed instances (``find_variable_history``: of all)."""
        return history_views.find_variables(self.core, replace(query, live_only=True), page)

    def count_variables(self, query: VariableQuery) -> int:
        return history_views.count_variables(self.core, replace(query, live_only=True))

    # --- what the Camunda-compatible HTTP API reads (sort names: the store's SORTS) ----

    def find_deployments(self, query: DeploymentQuery, page: Page = FIRST) -> list[DeploymentRow]:
        return deployment_views.find_deployments(self.core, query, page)

    def count_deployments(self, query: DeploymentQuery) -> int:
        return deployment_views.count_deployments(self.core, query)

    def deployment(self, deployment_id: UUID | str) -> DeploymentView:
        """A deployment with its files and the definitions it made."""
        return deployment_views.deployment(self.core, as_id(deployment_id, "deployment"))

    def deployment_resource(self, deployment_id: UUID | str, resource_id: UUID | str) -> bytes:
        """A file of a deployment, byte for byte as it was deployed."""
        did, rid = as_id(deployment_id, "deployment"), as_id(resource_id, "resource")
        return deployment_views.resource_data(self.core, did, rid)

    def find_process_definitions(
        self, query: DefinitionQuery, page: Page = FIRST
    ) -> list[DefinitionRow]:
        return deployment_views.find_definitions(self.core, query, page)

    def count_process_definitions(self, query: DefinitionQuery) -> int:
        return deployment_views.count_definitions(self.core, query)

    def process_definition(
        self, definition_id: UUID | str | None = None, *, key: str | None = None
    ) -> DefinitionRow:
        """By id, or the latest version of ``key``."""
        did = maybe_id(definition_id, "process definition")
        return deployment_views.definition_row(self.core, did, key)

    def unregistered(self, definition_id: UUID | str) -> list[str]:
        """What that definition calls that this engine has not registered: handlers (of
        tasks, listeners, call mappings), beans and delegates (``requirements.missing``)."""
        graph = self.core.graph(as_id(definition_id, "process definition"))
        return requirements.missing(graph, self.core.handlers, self.core.beans)

    def definition_source(self, definition_id: UUID | str) -> tuple[str, str]:
        """The text it was deployed from and its format (``bpmn`` or ``json``)."""
        did = as_id(definition_id, "process definition")
        return deployment_views.definition_source(self.core, did)

    def find_live_instances(
        self, query: LiveInstanceQuery, page: Page = FIRST
    ) -> list[InstanceRow]:
        """Running and failed instances (variable conditions need PostgreSQL)."""
        return instance_views.find(self.core, query, page)

    def count_live_instances(self, query: LiveInstanceQuery) -> int:
        return instance_views.count(self.core, query)

    def live_instance(self, instance_id: UUID | str) -> InstanceRow:
        """A running or failed instance; ``NotFound`` once it has ended."""
        return instance_views.live(self.core, as_id(instance_id, "instance"))

    def live_variables(self, instance_id: UUID | str) -> dict[str, Any]:
        return instance_views.live_variables(self.core, as_id(instance_id, "instance"))

    def definition_statistics(self) -> list[DefinitionStatistics]:
        """Every definition, its running and failed instances and open incidents by type."""
        return statistics.by_definition(self.core)

    def node_statistics(self, definition_id: UUID | str) -> list[NodeStatistics]:
        """The definition's nodes with tokens at work or open incidents, and how many."""
        return statistics.by_node(self.core, as_id(definition_id, "process definition"))

    def activity_tree(self, instance_id: UUID | str) -> ActivityTree:
        """Where a live instance's tokens are, subprocesses holding their inner tokens."""
        return instance_views.activity_tree(self.core, as_id(instance_id, "instance"))

    def instance_counts(self, definition_ids: Sequence[UUID]) -> InstanceCounts:
        """Those versions' instances by state and open incidents (the cockpit's processes)."""
        return instance_counts.counts(self.core, definition_ids)

    def metrics_snapshot(self) -> MetricsSnapshot:
        """The database's health counts for ``/metrics``: one indexed statement per family."""
        return metrics.snapshot(self.core)
