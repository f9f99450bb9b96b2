"""bpm's public face: the ``Engine`` facade and every value it takes or returns, the errors it
raises, and the few runtime helpers a process that serves the engine needs.

Everything outside the engine library (the HTTP server, the cockpit, the SDK's HTTP client,
a user's own code) imports from here, so the modules behind it can move without breaking
them. tests/unit/test_public_api.py checks that every type named in a facade method's
signature, and every type those values hold, is exported here.
"""

from __future__ import annotations

from bpm import __version__, credentials
from bpm.cli.runtime import broker_mode, import_handlers
from bpm.credentials import CredentialRow
from bpm.dispatch import Job, broker_dispatcher
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine, acting_as, because
from bpm.engine.operations.deployed_forms import DeployedForm, StartForm
from bpm.engine.operations.deployment_views import DeploymentView
from bpm.engine.operations.deployments import (
    Deployed,
    DeploymentResult,
    Options,
    Resource,
    ResourceKind,
    kind_of,
)
from bpm.engine.operations.event_subscriptions import EventSubscriptionQuery
from bpm.engine.operations.external import LockedTask, TopicRequest
from bpm.engine.operations.external_views import ExternalTaskView
from bpm.engine.operations.history_views import InstanceHistory, Visit, VisitQuery
from bpm.engine.operations.instance_views import ActivityNode, ActivityTree
from bpm.engine.operations.lifecycle import Started, StartOptions
from bpm.engine.operations.messages import Correlated, CorrelateOptions
from bpm.engine.operations.metrics import MetricsSnapshot, Runnable, WorkQueue
from bpm.engine.operations.scans import ScanConfig
from bpm.engine.operations.signals import Thrown
from bpm.engine.operations.statistics import DefinitionStatistics, NodeStatistics
from bpm.engine.operations.task_views import FormValue, UserTaskView
from bpm.engine.operations.variable_updates import VariableUpdate, VariableUpdateQuery
from bpm.errors import (
    AccessDenied,
    AmbiguousCorrelation,
    BadVariables,
    BpmError,
    ConfigError,
    DeploymentInvalid,
    Forbidden,
    FormInvalid,
    InputRefused,
    InvalidDefinition,
    InvalidExpression,
    InvalidOperation,
    InvalidRequest,
    NoMatchingWait,
    NotAuthenticated,
    NotFound,
    NotSupported,
    TaskClaimed,
    TaskLockError,
    UnknownProcess,
)
from bpm.limits import ERROR_DETAILS_MAX, ERROR_MESSAGE_MAX, NAME_MAX, quoted, shortened
from bpm.observe import NO_OBSERVER, ConflictKind, HandlerOutcome, Observer
from bpm.states import (
    LIVE_INSTANCE,
    LIVE_TOKEN,
    IncidentState,
    InstanceState,
    Role,
    TaskKind,
    TaskState,
    TimerState,
    TokenState,
)
from bpm.store import Database, DatabaseUnavailable
from bpm.store.db import database_url
from bpm.store.decisions import DecisionRow
from bpm.store.definition_queries import DefinitionQuery
from bpm.store.deployments import DeploymentQuery, DeploymentRow, ResourceRow
from bpm.store.filters import FilterQuery, FilterRow
from bpm.store.history_queries import FoundVariable, InstanceHistoryQuery, VariableQuery
from bpm.store.incident_queries import FoundIncident, IncidentQuery
from bpm.store.instance_counts import InstanceCounts
from bpm.store.instance_queries import LiveInstanceQuery, VariableCondition, VariableOp
from bpm.store.job_queries import FoundJob, JobKind, JobQuery
from bpm.store.migrate import require_current
from bpm.store.notify import Listener
from bpm.store.paging import Page
from bpm.store.queries import InstanceFields
from bpm.store.rows import DefinitionRow, IncidentRow, InstanceRow, TaskRow
from bpm.store.statistics import IncidentCount, LiveCounts
from bpm.store.task_comments import CommentRow
from bpm.store.task_filters import InstanceMatch
from bpm.store.task_queries import ExternalTaskQuery
from bpm.store.tasks import NOTIFY_CHANNEL
from bpm.store.user_task_queries import UserTaskQuery

__all__ = [
    "ERROR_DETAILS_MAX",
    "ERROR_MESSAGE_MAX",
    "LIVE_INSTANCE",
    "LIVE_TOKEN",
    "NAME_MAX",
    "NOTIFY_CHANNEL",
    "NO_OBSERVER",
    "AccessDenied",
    "ActivityNode",
    "ActivityTree",
    "AmbiguousCorrelation",
    "BadVariables",
    "BpmError",
    "CommentRow",
    "ConfigError",
    "ConflictKind",
    "CorrelateOptions",
    "Correlated",
    "CredentialRow",
    "Database",
    "DatabaseUnavailable",
    "DecisionRow",
    "DefinitionQuery",
    "DefinitionRow",
    "DefinitionStatistics",
    "Deployed",
    "DeployedForm",
    "DeploymentInvalid",
    "DeploymentQuery",
    "DeploymentResult",
    "DeploymentRow",
    "DeploymentView",
    "EmbeddedRuntime",
    "Engine",
    "EventSubscriptionQuery",
    "ExternalTaskQuery",
    "ExternalTaskView",
    "FilterQuery",
    "FilterRow",
    "Forbidden",
    "FormInvalid",
    "FormValue",
    "FoundIncident",
    "FoundJob",
    "FoundVariable",
    "HandlerOutcome",
    "IncidentCount",
    "IncidentQuery",
    "IncidentRow",
    "IncidentState",
    "InputRefused",
    "InstanceCounts",
    "InstanceFields",
    "InstanceHistory",
    "InstanceHistoryQuery",
    "InstanceMatch",
    "InstanceRow",
    "InstanceState",
    "InvalidDefinition",
    "InvalidExpression",
    "InvalidOperation",
    "InvalidRequest",
    "Job",
    "JobKind",
    "JobQuery",
    "Listener",
    "LiveCounts",
    "LiveInstanceQuery",
    "LockedTask",
    "MetricsSnapshot",
    "NoMatchingWait",
    "NodeStatistics",
    "NotAuthenticated",
    "NotFound",
    "NotSupported",
    "Observer",
    "Options",
    "Page",
    "Resource",
    "ResourceKind",
    "ResourceRow",
    "Role",
    "Runnable",
    "ScanConfig",
    "StartForm",
    "StartOptions",
    "Started",
    "TaskClaimed",
    "TaskKind",
    "TaskLockError",
    "TaskRow",
    "TaskState",
    "Thrown",
    "TimerState",
    "TokenState",
    "TopicRequest",
    "UnknownProcess",
    "UserTaskQuery",
    "UserTaskView",
    "VariableCondition",
    "VariableOp",
    "VariableQuery",
    "VariableUpdate",
    "VariableUpdateQuery",
    "Visit",
    "VisitQuery",
    "WorkQueue",
    "__version__",
    "acting_as",
    "because",
    "broker_dispatcher",
    "broker_mode",
    "credentials",
    "database_url",
    "import_handlers",
    "kind_of",
    "quoted",
    "require_current",
    "shortened",
]
