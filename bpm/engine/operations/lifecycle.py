"""Deploying definitions, starting instances, and the operator's actions (retry, cancel)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack
from uuid import UUID

from sqlalchemy.exc import DBAPIError

from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.form_values import check_submission, shown_defaults
from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Conflict, Next, StartTaken, Tx
from bpm.engine.operations import deployments
from bpm.engine.operations.deployments import Deployed as Deployed
from bpm.engine.semantics import instances as instances_semantics
from bpm.engine.semantics import process_ends, steps
from bpm.engine.semantics.cancelling import cancel_token
from bpm.engine.semantics.instance_state import set_instance_state
from bpm.errors import DeploymentInvalid, InvalidOperation, NotFound, UnknownProcess
from bpm.limits import NAME_MAX, check_text, quoted
from bpm.states import (
    InstanceState,
    TokenState,
)
from bpm.store import definitions, instances
from bpm.store.batch import start_taken
from bpm.store.db import first_statement_commits
from bpm.store.rows import DefinitionRef, InstanceRow
from bpm.variables import check_variables

OPERATOR = "operator"


@dataclass(frozen=True)
class Started:
    id: UUID
    key: str
    business_key: str | None
    state: str
    created: bool


def deploy(
    core: EngineCore,
    document: Mapping[str, Any],
    *,
    source: str | None = None,
    source_format: str = "json",
) -> Deployed:
    """Validate, then store as a new version unless the latest version is the same graph;
    a new version comes with a deployment of its own (its one file named for its key)."""
    key = str(document.get("key", "process")) if isinstance(document, Mapping) else "process"
    kind = (
        deployments.ResourceKind.BPMN if source_format == "bpmn" else deployments.ResourceKind.JSON
    )
    plain = dict(document) if isinstance(document, Mapping) else document
    text = source if source is not None else json.dumps(plain, indent=2, default=str)
    suffix = ".bpmn" if kind == deployments.ResourceKind.BPMN else ".json"
    resource = deployments.Resource(f"{key}{suffix}", text.encode(), kind, document)
    try:
        (deployed,) = deployments.deploy(core, [resource], name=key).processes
    except DeploymentInvalid as exc:
        # One document deployed: its own error, as ``compile_definition`` raised it.
        raise exc.causes.get(resource.name, exc) from None
    return deployed


def deploy_bpmn(
    core: EngineCore, xml: str | bytes, *, name: str | None = None, resource: str | None = None
) -> list[Deployed]:
    """Every process of a BPMN 2.0 file, in one deployment; all are checked before any is
    stored."""
    content = xml.encode() if isinstance(xml, str) else xml
    if resource is None:
        first = compile_bpmn(content, handlers=core.handlers.names())[0]["key"]
        resource = f"{first}.bpmn"
    files = [deployments.Resource(resource, content, deployments.ResourceKind.BPMN)]
    return deployments.deploy(core, files, name=name or resource).processes


def start_key(
    idempotency_key: str | None, business_key: str | None, message_id: str | None
) -> str | None:
    """The key that makes a start happen once, the same on every start path (Python API,
    CLI, Celery task, HTTP): the caller's idempotency key, else the business key, else the
    transport's id of the message that carried the request.

    So a start sent again with the same business key returns the instance the first one
    made, whether it is still running or has ended; only a distinct idempotency key starts
    a second instance for the same business key.
    """
    for candidate in (idempotency_key, business_key, message_id):
        if candidate is not None:
            return candidate
    return None


class StartOptions(TypedDict, total=False):
    """What else a start may say: the keys that make it idempotent (``start_key``), and a
    definition version other than the latest."""

    business_key: str | None
    idempotency_key: str | None
    version: int | None
    message_id: str | None
    #: Who starts it: the start event's ``initiator`` variable receives this id.
    user: str | None
    #: The variables are a submission of the start form: checked against it, defaults
    #: filled, its business key field read (Camunda's ``submitStartForm``). A plain start,
    #: as Camunda's ``startProcessInstanceByKey``, is not checked.
    submit_form: bool


def start(
    core: EngineCore,
    key: str,
    values: Mapping[str, Any] | None = None,
    run_now: bool = False,
    inline: bool = True,
    **options: Unpack[StartOptions],
) -> tuple[Started, Next]:
    """Start an instance, or return the one its start key (``start_key``) already started;
    with it, what the caller goes on with itself.

    With ``run_now`` (a worker's start job) the new token goes through the automatic nodes
    after the start event in the start's own transaction, and a task this process runs is
    created locked by it, as any step of a job's run does: one transaction and one broker
    hop less per instance. The caller goes on with what that returns; if it dies first, the
    scans find the token or the task. ``inline`` false: the caller cannot go on with a task
    (its run allows no further step), so tasks are created for any worker to lock.
    """
    business_key = options.get("business_key")
    idempotency_key = options.get("idempotency_key")
    version = options.get("version")
    message_id = options.get("message_id")
    checked = check_variables(values, where=f"start of {key!r}")
    for name, given in (
        ("business key", business_key),
        ("idempotency key", idempotency_key),
        ("message id", message_id),
    ):
        if given is not None and (not isinstance(given, str) or not given):
            raise InvalidOperation(f"the {name} must be a non-empty string, got {quoted(given)}")
        check_text(given, f"the {name}", NAME_MAX)
    ikey = start_key(idempotency_key, business_key, message_id)
    try:
        with core.transaction(inline=run_now and inline) as tx:
            with first_statement_commits(tx.conn):  # plain reads: no BEGIN for them
                row = _definition(tx, key, version)
            if ikey is not None:
                with first_statement_commits(tx.conn):
                    existing = instances.by_idempotency_key(tx.conn, key, ikey)
                if existing is not None:
                    return _found(existing, key), None
            graph = core.graph(row.id, tx.conn)
            checked, business_key = _start_values(graph, key, checked, business_key, options)
            if ikey is None and business_key is not None:
                ikey = business_key  # the start form's business key makes it happen once too
                existing = instances.by_idempotency_key(tx.conn, key, ikey)
                if existing is not None:
                    return _found(existing, key), None
            made = instances_semantics.create(
                tx, row, graph, checked, business_key=business_key, start_key=ikey, with_batch=True
            )
            if made is None:  # a concurrent start took the key first (ON CONFLICT DO NOTHING)
                existing = instances.by_idempotency_key(tx.conn, key, ikey or "")
                assert existing is not None
                return _found(existing, key), None
            inst, root = made
            core.remember(inst.id, row.id, key, business_key, started_at=inst.started_at)
            nxt: Next = None
            if run_now:
                begun = time.perf_counter()
                nxt = steps.carry_through(tx, graph, steps.advance(tx, graph, root))
            else:
                tx.advance_later(root.id, 0)
    except StartTaken:  # another start took the key while this one ran: nothing was written
        return _taken(core, key, ikey), None
    except DBAPIError as exc:
        if start_taken(exc):
            return _taken(core, key, ikey), None
        if _definition_gone(exc):
            raise UnknownProcess(
                f"process definition {key!r} was deleted (with its deployment) while this "
                "start ran; nothing was started"
            ) from None
        raise
    if run_now and core.observer.enabled:  # committed: the start event's step counts
        core.observer.step_done(graph.node(root.node_id).type, time.perf_counter() - begun)
    started = Started(inst.id, key, business_key, InstanceState.RUNNING, True)
    return started, nxt


def _start_values(
    graph: ProcessGraph,
    key: str,
    checked: dict[str, Any],
    business_key: str | None,
    options: StartOptions,
) -> tuple[dict[str, Any], str | None]:
    """The start's variables and business key as its start event makes them: the
    ``initiator`` variable, and a start form's defaults and business key field."""
    first = graph.start_of(None)
    triggered = [
        *graph.message_starts,
        *graph.timer_starts,
        *graph.conditional_starts,
        *graph.signal_starts,
    ]
    if (first.message or first.timer or first.condition or first.signal) and len(triggered) > 1:
        raise InvalidOperation(
            f"process {key!r} has no none start event: it starts by its message, timer, "
            f"conditional or signal start events ({', '.join(sorted(triggered))})"
        )
    if first.initiator is not None and (
        options.get("user") is not None or first.initiator not in checked
    ):
        checked = {**checked, first.initiator: options.get("user")}
    start_form = first.form
    if start_form is not None and options.get("submit_form"):
        defaults = shown_defaults(start_form, checked)
        fill = check_submission(start_form, checked, {}, defaults, f"starting {key!r}")
        checked = {**fill, **checked}
        if business_key is None and (from_form := start_form.business_key(checked)):
            business_key = from_form
            check_text(business_key, "the business key", NAME_MAX)
    return checked, business_key


def _found(existing: InstanceRow, key: str) -> Started:
    """The instance an earlier start with the same key made."""
    return Started(existing.id, key, existing.business_key, existing.state, False)


def _taken(core: EngineCore, key: str, ikey: str | None) -> Started:
    """The instance of the start that took ``ikey`` first."""
    with core.transaction() as tx:
        existing = instances.by_idempotency_key(tx.conn, key, ikey or "")
    assert existing is not None
    return _found(existing, key)


def _definition_gone(exc: DBAPIError) -> bool:
    """Whether the new instance's row found its definition deleted (with its deployment)
    after the start read it: the delete locks the definition rows, so the insert waited for
    it and then found none."""
    diag = getattr(exc.orig, "diag", None)
    return getattr(exc.orig, "sqlstate", None) == instances.FOREIGN_KEY_SQLSTATE and (
        getattr(diag, "constraint_name", None) == instances.DEFINITION_FK
    )


def _definition(tx: Tx, key: str, version: int | None) -> DefinitionRef:
    row = definitions.latest_ref(tx.conn, key, version)
    if row is None:
        which = f"{key!r}" if version is None else f"{key!r} version {version}"
        raise UnknownProcess(
            f"no process definition {which} is deployed; deploy it first (bpm deploy FILE)"
        )
    return row


def cancel(
    core: EngineCore,
    instance_id: UUID,
    reason: str = "cancelled by an operator",
    skip_listeners: bool = False,
) -> None:
    """Cancel every live token, task and incident, and the instance (one transaction); when
    the process has ``end`` listeners (and ``skip_listeners`` is false, Camunda's
    ``skipCustomListeners``), the instance is CANCELLED once they ran (``process_ends``).

    The instance's row is locked first, as every transaction that locks it does (the
    engine's lock order, ``Tx.lock_instance``), so a cancel racing a worker queues at that
    row rather than holding rows the other waits for: it cannot deadlock with it.
    """

    def run() -> None:
        with core.transaction(OPERATOR) as tx:
            inst = tx.locked_instance(instance_id)
            if inst is None:
                raise NotFound(f"instance {instance_id} does not exist")
            if inst.state not in (InstanceState.RUNNING, InstanceState.FAILED):
                raise InvalidOperation(
                    f"instance {instance_id} is {inst.state}; only RUNNING "
                    f"or FAILED instances can be cancelled"
                )
            tokens = tx.tokens_of(instance_id)
            g = core.graph(inst.process_def_id, tx.conn)
            root = None if skip_listeners else process_ends.listening_root(tx, g, tokens)
            if root is not None:  # the process's end listeners run first, then it is over
                process_ends.cancel_listening(tx, g, root, reason)
                return
            for tok in tokens:
                if tok.state in (TokenState.ACTIVE, TokenState.WAITING, TokenState.FAILED):
                    cancel_token(tx, tok, reason)
            if not set_instance_state(tx, instance_id, InstanceState.CANCELLED):
                raise Conflict(f"instance {instance_id} ended while it was being cancelled")

    core.retrying(run)
