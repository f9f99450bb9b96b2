"""The public facade: it assembles the engine (a core, a job runner) and delegates each use
case to ``bpm.engine.operations``; tokens' node semantics are in ``bpm.engine.semantics``."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack
from uuid import UUID

from bpm.dispatch import Dispatcher, Job
from bpm.engine.core.causes import acting_as, because
from bpm.engine.core.engine_core import CoreOptions, EngineCore
from bpm.engine.core.ids import as_id, maybe_id
from bpm.engine.engine_diagrams import EngineDiagrams
from bpm.engine.engine_external import ExternalTaskCalls
from bpm.engine.engine_filters import FilterCalls
from bpm.engine.engine_reads import EngineReads
from bpm.engine.engine_tasks import UserTaskCalls
from bpm.engine.jobs import table
from bpm.engine.jobs.runner import CHAIN_SECONDS, CHAIN_STEPS, JobRunner
from bpm.engine.operations import (
    condition_starts,
    decisions,
    deployment_removal,
    deployments,
    instance_variables,
    lifecycle,
    messages,
    repairs,
    retention,
    scans,
    signals,
    timers,
)
from bpm.engine.operations.lifecycle import StartOptions
from bpm.store import Database

__all__ = ["Engine", "acting_as", "as_id", "because"]


class Engine(UserTaskCalls, FilterCalls, ExternalTaskCalls, EngineReads, EngineDiagrams):
    """Runs process instances stored in ``db``; hands follow-up work to ``dispatcher``."""

    def __init__(
        self,
        db: Database,
        dispatcher: Dispatcher,
        *,
        chain_limit: int = CHAIN_STEPS,
        chain_seconds: float = CHAIN_SECONDS,
        **options: Unpack[CoreOptions],
    ) -> None:
        """``chain_limit``, ``chain_seconds``: how far one job goes on in process before it
        queues the rest; ``options``: the handler registry, clock, worker id, whether handlers
        run in this process right after the step that made their task, and the event
        listeners."""
        self.core = EngineCore(db, dispatcher, **options)
        self.runner = JobRunner(self.core, chain_limit, chain_seconds)
        self.db, self.dispatcher, self.clock = db, dispatcher, self.core.clock
        self.handlers, self.worker_id = self.core.handlers, self.core.worker_id

    def run_job(self, job: Job) -> str:  # any job by name, decoded and run as a worker does
        return table.run_job(self, job)

    def advance(self, token_id: UUID, expected_version: int) -> str:  # the runner's jobs
        return self.runner.advance(token_id, expected_version)

    def run_handler(self, task_id: UUID) -> str:
        return self.runner.run_handler(task_id)

    def deploy(
        self, document: Mapping[str, Any], *, source: str | None = None, source_format: str = "json"
    ) -> lifecycle.Deployed:
        with because("api deploy"):
            return lifecycle.deploy(self.core, document, source=source, source_format=source_format)

    def deploy_bpmn(self, xml: str | bytes, **named: str) -> list[lifecycle.Deployed]:
        """Deploy every process of a BPMN 2.0 file (see docs/bpmn.md) in one deployment
        (``name``, ``resource``: the file's name); all are checked before any is stored."""
        with because("api deploy"):
            return lifecycle.deploy_bpmn(self.core, xml, **named)

    def deploy_dmn(self, xml: str | bytes, **named: str) -> list[decisions.DeployedDecision]:
        """Deploy every decision of a DMN file (see docs/dmn.md) for business rule tasks."""
        with because("api deploy"):
            return decisions.deploy_dmn(self.core, xml, **named)

    def deploy_files(
        self, files: Sequence[deployments.Resource], **options: Unpack[deployments.Options]
    ) -> deployments.DeploymentResult:
        """Deploy several files as one deployment, all or nothing (``deployments.deploy``)."""
        with because("api deploy"):
            return deployments.deploy(self.core, files, **options)

    def delete_deployment(self, deployment_id: UUID | str) -> None:
        """Delete a deployment whose definitions no instance was started from."""
        with because(f"api delete deployment {deployment_id}"):
            deployment_removal.delete(self.core, as_id(deployment_id, "deployment"))

    def decide(
        self, key: str, variables: Mapping[str, Any] | None = None, *, version: int | None = None
    ) -> dict[str, Any]:
        """Evaluate decision ``key`` over ``variables``; stores nothing (``bpm decide``)."""
        return decisions.decide(self.core, key, variables, version)

    def start(
        self,
        key: str,
        variables: Mapping[str, Any] | None = None,
        *,
        run_now: bool = False,
        **options: Unpack[StartOptions],
    ) -> lifecycle.Started:
        """Start an instance, or return the one the same start already made (the key is the
        ``idempotency_key``, else the ``business_key``, else the ``message_id``: see
        ``lifecycle.start_key``); ``version`` picks one other than the latest. ``run_now``
        goes on with it in this call (for a worker's job) instead of queueing its first step."""
        with because(f"api start {key}"):
            more = self.runner.chain_limit > 1
            started, first = lifecycle.start(self.core, key, variables, run_now, more, **options)
            if first is not None:
                self.runner.go_on(first)
            return started

    def evaluate_conditions(
        self,
        variables: Mapping[str, Any] | None = None,
        *,
        business_key: str | None = None,
        process_key: str | None = None,
        definition_id: UUID | str | None = None,
    ) -> list[lifecycle.Started]:
        """Camunda's ``evaluateConditions``: start an instance at every conditional start
        event (of the latest versions; of ``process_key``'s, or of the version
        ``definition_id``, if given) whose condition holds over ``variables``."""
        with because("api evaluate_conditions"):
            return condition_starts.evaluate(
                self.core,
                variables,
                business_key=business_key,
                process_key=process_key,
                definition_id=maybe_id(definition_id, "definition"),
            )

    def cancel(
        self,
        instance_id: UUID | str,
        reason: str = "cancelled by an operator",
        *,
        skip_listeners: bool = False,
    ) -> None:
        with because("operator cancel"):
            lifecycle.cancel(self.core, as_id(instance_id, "instance"), reason, skip_listeners)

    def retry(self, token_or_task: UUID | str, retries: int | None = None) -> UUID:
        with because(f"operator retry {token_or_task}"):
            return repairs.retry(self.core, as_id(token_or_task, "token or task"), retries)

    def resolve(self, incident_or_token: UUID | str, note: str | None = None) -> UUID:
        """Mark an open incident resolved (the operator fixed the cause by hand)."""
        with because(f"operator resolve {incident_or_token}"):
            return repairs.resolve(self.core, as_id(incident_or_token, "incident or token"), note)

    def fire_due_timers(self, now: datetime | None = None, batch: int = 500) -> int:
        """Fire the timers due at ``now`` (default: the engine's clock); returns how many."""
        with because("scan timers"):
            return len(timers.scan_timers(self.core, now or self.core.clock.now(), batch))

    def next_timer_due(self) -> datetime | None:
        return timers.next_due(self.core)

    def correlate(
        self,
        message: str,
        *,
        business_key: str | None = None,
        instance_id: UUID | str | None = None,
        variables: Mapping[str, Any] | None = None,
        all_waiting: bool = False,
        start_messages_only: bool = False,
        idempotency_key: str | None = None,
        message_id: str | None = None,
    ) -> list[UUID]:
        """Deliver a message to the token(s) waiting for it (in the named instance, the
        instances of the business key, or, naming neither, any instance), or, when none
        does and no instance is named, start an instance at the message start event waiting for it
        (once per ``idempotency_key``, else business key, else the transport's
        ``message_id``); returns the tokens moved on (a
        started instance's root token). Raises ``NoMatchingWait`` when nothing takes it,
        ``AmbiguousCorrelation`` when several tokens do and ``all_waiting`` is false."""
        with because(f"api correlate {message}"):
            iid = maybe_id(instance_id, "instance")
            found = messages.correlate_tokens(
                self.core,
                message,
                business_key=business_key,
                instance_id=iid,
                variables=variables,
                all_waiting=all_waiting,
                start_messages_only=start_messages_only,
                idempotency_key=idempotency_key,
                message_id=message_id,
            )
            return [c.token_id for c in found]

    def correlate_tokens(
        self, message: str, **options: Unpack[messages.CorrelateOptions]
    ) -> list[messages.Correlated]:
        """As ``correlate``, with ``correlation_keys`` (instance variables that must match);
        returns the tokens moved on with their instances."""
        with because(f"api correlate {message}"):
            return messages.correlate_tokens(self.core, message, **options)

    def throw_signal(
        self,
        name: str,
        variables: Mapping[str, Any] | None = None,
        *,
        throw_key: str | None = None,
        token_id: UUID | str | None = None,
        process_keys: Collection[str] | None = None,
    ) -> signals.Thrown:
        """Broadcast a signal to every subscription that exists now (catches, boundaries,
        event subprocesses, events after gateways, signal start events); delivered by the
        ``bpm.deliver_signal`` job in batches. ``throw_key``: a request sent again with the
        same key throws once; ``token_id`` (Camunda's ``executionId``): only that token's
        subscriptions; ``process_keys``: only instances and starts of those processes."""
        with because(f"api signal {name}"):
            tid = maybe_id(token_id, "token")
            return signals.throw(
                self.core,
                name,
                variables,
                throw_key=throw_key,
                token_id=tid,
                process_keys=process_keys,
            )

    def set_variables(
        self,
        instance_id: UUID | str,
        modifications: Mapping[str, Any] | None = None,
        deletions: Sequence[str] = (),
    ) -> None:
        """Set, then remove, variables of a live instance in one transaction."""
        with because(f"api set_variables instance={instance_id}"):
            iid = as_id(instance_id, "instance")
            instance_variables.modify(self.core, iid, modifications, deletions)

    def run_scans(
        self, now: datetime | None = None, cfg: scans.ScanConfig | None = None
    ) -> dict[str, int]:
        with because("scans"):
            return table.run_all_scans(self.core, now, cfg)

    def cleanup_history(
        self, now: datetime | None = None, default_ttl: timedelta | None = None
    ) -> int:
        """Delete ended instances past their ``historyTimeToLive`` (else ``default_ttl``; with
        neither they are kept) with all their rows; returns how many."""
        now = now or self.core.clock.now()
        return retention.cleanup(self.core, now, default_ttl=default_ttl)
