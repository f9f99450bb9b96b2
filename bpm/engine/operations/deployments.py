"""Deployments: several files (BPMN, DMN, JSON definitions, anything else) deployed at once,
all or nothing.

Every file is parsed and checked before anything is stored; then one transaction stores the
deployment, its files and each definition that differs from the latest version of its key
(bpm never makes a version equal to the one before it). A deploy of ``changed_only`` files
whose definitions and files are all unchanged stores nothing and answers the deployment they
came from, as Camunda's ``deploy-changed-only`` does.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, TypedDict, Unpack
from uuid import UUID

from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.requirements import compile_definition, compile_for_deploy
from bpm.definitions.signals import Subscription, subscriptions
from bpm.dmn import Decision, parse_dmn
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Conflict, Tx
from bpm.engine.operations import start_timers as timer_starts
from bpm.errors import DeploymentInvalid, InputRefused, InvalidDefinition, InvalidOperation
from bpm.limits import NAME_MAX, RESOURCE_MAX_BYTES, check_text, quoted
from bpm.states import EngineEvent
from bpm.store import decisions, definitions, deployments, message_starts, signals
from bpm.store.decisions import DecisionVersionTaken
from bpm.store.definitions import VersionTaken
from bpm.store.deployments import DeploymentRow

OPERATOR = "operator"
#: Who deployed, when the caller does not say (the Python API and ``bpm deploy``).
DEFAULT_SOURCE = "bpm"


class ResourceKind(StrEnum):
    BPMN = "BPMN"
    DMN = "DMN"
    JSON = "JSON"
    #: Stored as it is and never read (a form, a diagram image).
    OTHER = "OTHER"


_SUFFIXES = (
    (".bpmn20.xml", ResourceKind.BPMN),
    (".bpmn", ResourceKind.BPMN),
    (".dmn11.xml", ResourceKind.DMN),
    (".dmn", ResourceKind.DMN),
)


def kind_of(name: str, *, json_definitions: bool = False) -> ResourceKind:
    """By the file name's suffix, as Camunda tells them; ``.json`` is a bpm definition only
    where the caller says so (the Python API), else a file like any other."""
    lower = name.lower()
    for suffix, kind in _SUFFIXES:
        if lower.endswith(suffix):
            return kind
    if json_definitions and lower.endswith(".json"):
        return ResourceKind.JSON
    return ResourceKind.OTHER


@dataclass(frozen=True)
class Resource:
    """A file to deploy. ``document``: the definition it holds, already read (the Python
    API's ``deploy(document)``); then ``content`` is only stored, as the definition's source."""

    name: str
    content: bytes
    kind: ResourceKind = ResourceKind.OTHER
    document: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Deployed:
    """A process (or decision: ``DeployedDecision``) definition a deployment holds."""

    id: UUID
    key: str
    version: int
    created: bool


DeployedDecision = Deployed


@dataclass(frozen=True)
class DeploymentResult:
    """``created`` False: nothing had changed, ``deployment`` is the one it all came from."""

    deployment: DeploymentRow | None
    created: bool
    processes: list[Deployed] = field(default_factory=list)
    decisions: list[DeployedDecision] = field(default_factory=list)


@dataclass
class _Process:
    resource: str
    key: str
    name: str
    document: dict[str, Any]
    checksum: str
    source: str
    source_format: str
    ttl_seconds: int | None
    #: message name -> start event id
    message_starts: dict[str, str] = field(default_factory=dict)
    timer_starts: tuple[str, ...] = ()
    signals: list[Subscription] = field(default_factory=list)


@dataclass
class _Decision:
    resource: str
    decision: Decision
    source: str
    checksum: str


@dataclass
class _Checked:
    processes: list[_Process] = field(default_factory=list)
    decisions: list[_Decision] = field(default_factory=list)


def checksum(document: Any) -> str:
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _text(content: bytes) -> str:
    return content.decode("utf-8", "replace")


def _ttl_seconds(ttl: timedelta | None) -> int | None:
    """Whole seconds, rounded up: an instance is never deleted before its TTL has passed."""
    return None if ttl is None else math.ceil(ttl.total_seconds())


def _process(resource: str, document: Any, source: str, fmt: str) -> _Process:
    graph = compile_for_deploy(document)
    digest = checksum(graph.document)
    ttl = _ttl_seconds(graph.history_ttl)
    return _Process(
        resource,
        graph.key,
        graph.name,
        graph.document,
        digest,
        source,
        fmt,
        ttl,
        dict(graph.message_starts),
        graph.timer_starts,
        subscriptions(graph),
    )


def check(core: EngineCore, resources: Sequence[Resource]) -> _Checked:
    """Parse every file; ``DeploymentInvalid`` lists the problems of each refused one."""
    if not resources:
        raise InvalidOperation("a deployment needs at least one file")
    names = [r.name for r in resources]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidOperation(f"a deployment holds each file name once: {', '.join(twice)}")
    for res in resources:
        check_text(res.name, "the file name", NAME_MAX)
        if res.kind == ResourceKind.OTHER and len(res.content) > RESOURCE_MAX_BYTES:
            raise InputRefused(
                f"file {quoted(res.name)} has {len(res.content)} bytes; a file bpm stores"
                f" without reading it may have at most {RESOURCE_MAX_BYTES}",
                res.name,
            )
    out, problems, causes = _Checked(), {}, {}
    for res in resources:
        try:
            if res.document is not None:
                fmt = "bpmn" if res.kind == ResourceKind.BPMN else "json"
                out.processes.append(_process(res.name, res.document, _text(res.content), fmt))
            elif res.kind == ResourceKind.BPMN:
                docs = compile_bpmn(res.content, handlers=core.handlers.names())
                text = _text(res.content)
                out.processes += [_process(res.name, d, text, "bpmn") for d in docs]
            elif res.kind == ResourceKind.JSON:
                text = _text(res.content)
                try:
                    document = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise InvalidDefinition(f"line {exc.lineno}: not JSON: {exc.msg}") from None
                out.processes.append(_process(res.name, document, text, "json"))
            elif res.kind == ResourceKind.DMN:
                parsed = parse_dmn(res.content)
                text = _text(res.content)
                digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
                out.decisions += [
                    _Decision(res.name, d, text, digest) for d in parsed.decisions.values()
                ]
        except InvalidDefinition as exc:
            problems[res.name] = str(exc).splitlines()
            causes[res.name] = exc
    if problems:
        lines = [f"{name}: {line}" for name, found in problems.items() for line in found]
        message = "the deployment is refused:\n" + "\n".join(lines)
        raise DeploymentInvalid(message, problems, causes)
    for kind, keys in (
        ("process", [p.key for p in out.processes]),
        ("decision", [d.decision.key for d in out.decisions]),
    ):
        again = sorted({k for k in keys if keys.count(k) > 1})
        if again:
            raise InvalidOperation(f"the deployment defines {kind} {', '.join(again)} twice")
    return out


class Options(TypedDict, total=False):
    """A deployment's name and source (who deployed it); ``changed_only`` (the default):
    leave out the files that did not change, and store nothing when none did;
    ``filter_duplicates``: store nothing when no file changed, else every file (Camunda's
    ``enable-duplicate-filtering``). With neither, every deploy is a deployment of all its
    files (its definitions still make no version equal to the one before)."""

    name: str | None
    source: str | None
    changed_only: bool
    filter_duplicates: bool


def deploy(
    core: EngineCore, resources: Sequence[Resource], **options: Unpack[Options]
) -> DeploymentResult:
    """Check every file, then store them in one transaction (retried when a concurrent
    deploy took a version number first)."""
    name = options.get("name")
    source = options.get("source", DEFAULT_SOURCE)
    changed_only = options.get("changed_only", True)
    filtered = changed_only or options.get("filter_duplicates", False)
    check_text(name, "the deployment name", NAME_MAX)
    check_text(source, "the deployment source", NAME_MAX)
    checked = check(core, resources)
    for _ in range(5):
        try:
            with core.transaction(OPERATOR) as tx:
                return _store(tx, resources, checked, name, source, (changed_only, filtered))
        except (VersionTaken, DecisionVersionTaken):
            continue
    raise Conflict(f"could not deploy {name!r}: concurrent deploys kept winning")


def _store(
    tx: Tx,
    resources: Sequence[Resource],
    checked: _Checked,
    name: str | None,
    source: str | None,
    modes: tuple[bool, bool],
) -> DeploymentResult:
    changed_only, filtered = modes
    conn = tx.conn
    latest_p = {p.key: definitions.latest(conn, p.key) for p in checked.processes}
    latest_d = {d.decision.key: decisions.latest(conn, d.decision.key) for d in checked.decisions}
    changed: set[str] = set()
    for p in checked.processes:
        row = latest_p[p.key]
        if row is None or row.checksum != p.checksum:
            changed.add(p.resource)
    for d in checked.decisions:
        drow = latest_d[d.decision.key]
        if drow is None or drow.checksum != d.checksum:
            changed.add(d.resource)
    digests = {r.name: hashlib.sha256(r.content).hexdigest() for r in resources}
    for res in resources:
        if res.kind == ResourceKind.OTHER:
            if deployments.latest_checksum(conn, res.name) != digests[res.name]:
                changed.add(res.name)
    unchanged_p = [
        Deployed(row.id, key, row.version, False)
        for key, row in latest_p.items()
        if row is not None and row.checksum == _digest(checked, key)
    ]
    unchanged_d = [
        DeployedDecision(row.id, key, row.version, False)
        for key, row in latest_d.items()
        if row is not None and row.checksum == _decision_digest(checked, key)
    ]
    if filtered and not changed:
        previous = _previous(tx, resources, digests, latest_p, latest_d)
        return DeploymentResult(previous, False, unchanged_p, unchanged_d)
    _check_message_starts(tx, checked)
    deployment = deployments.insert(conn, name=name, source=source, now=tx.now)
    for res in resources:
        if not changed_only or res.name in changed:
            deployments.add_resource(conn, deployment.id, res.name, res.content, digests[res.name])
    made_p = [_insert_process(tx, p, latest_p[p.key], deployment.id) for p in checked.processes]
    made_d = [
        _insert_decision(tx, d, latest_d[d.decision.key], deployment.id) for d in checked.decisions
    ]
    return DeploymentResult(deployment, True, made_p, made_d)


def _check_message_starts(tx: Tx, checked: _Checked) -> None:
    """A message starts instances of one process only: a message start event whose message
    the latest version of another process already starts on is refused (as in Camunda 7);
    a new version of the same process takes the message over."""
    for p in checked.processes:
        for message in p.message_starts:
            taken = [s for s in message_starts.listening(tx.conn, message) if s.key != p.key]
            if taken:
                raise InvalidOperation(
                    f"{p.resource}: process {p.key!r} is not deployed: its message start event "
                    f"{p.message_starts[message]!r} waits for {message!r}, which already starts "
                    f"process {taken[0].key!r}; a message starts instances of one process"
                )


def _digest(checked: _Checked, key: str) -> str:
    return next(p.checksum for p in checked.processes if p.key == key)


def _decision_digest(checked: _Checked, key: str) -> str:
    return next(d.checksum for d in checked.decisions if d.decision.key == key)


def _previous(
    tx: Tx,
    resources: Sequence[Resource],
    digests: dict[str, str],
    latest_p: dict[str, Any],
    latest_d: dict[str, Any],
) -> DeploymentRow | None:
    """The newest deployment the unchanged files or definitions came from."""
    ids = {deployments.newest_with(tx.conn, r.name, digests[r.name]) for r in resources}
    ids |= {row.deployment_id for row in [*latest_p.values(), *latest_d.values()] if row}
    found = deployments.get_many(tx.conn, [i for i in ids if i is not None])
    return max(found, key=lambda d: (d.deployment_time, str(d.id)), default=None)


def _insert_process(tx: Tx, p: _Process, latest: Any, deployment_id: UUID) -> Deployed:
    if latest is not None and latest.checksum == p.checksum:
        return Deployed(latest.id, p.key, latest.version, created=False)
    row = definitions.insert(
        tx.conn,
        key=p.key,
        name=p.name,
        version=(latest.version + 1) if latest else 1,
        graph=p.document,
        source=p.source,
        source_format=p.source_format,
        checksum=p.checksum,
        now=tx.now,
        history_ttl_seconds=p.ttl_seconds,
        deployment_id=deployment_id,
        resource=p.resource,
    )
    message_starts.record(tx.conn, row.id, p.message_starts)
    signals.record(tx.conn, row.id, p.signals)
    timer_starts.arm(tx, row, compile_definition(p.document) if p.timer_starts else None)
    tx.history.engine(
        instance_id=None,
        at=tx.now,
        type=EngineEvent.DEFINITION_DEPLOYED,
        actor=tx.actor,
        data={"id": str(row.id), "key": p.key, "version": row.version},
    )
    return Deployed(row.id, p.key, row.version, created=True)


def _insert_decision(tx: Tx, d: _Decision, latest: Any, deployment_id: UUID) -> DeployedDecision:
    key = d.decision.key
    if latest is not None and latest.checksum == d.checksum:
        return DeployedDecision(latest.id, key, latest.version, created=False)
    row = decisions.insert(
        tx.conn,
        key=key,
        name=d.decision.name or key,
        version=latest.version + 1 if latest else 1,
        version_tag=d.decision.version_tag,
        source_text=d.source,
        checksum=d.checksum,
        now=tx.now,
        deployment_id=deployment_id,
        resource=d.resource,
    )
    tx.history.engine(
        instance_id=None,
        at=tx.now,
        type=EngineEvent.DECISION_DEPLOYED,
        actor=tx.actor,
        data={"id": str(row.id), "key": key, "version": row.version},
    )
    return DeployedDecision(row.id, key, row.version, created=True)
