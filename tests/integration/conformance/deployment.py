"""Deploying a case: its model with its called and companion models, or the importer's refusal
(the verdict ``rejected at deploy: …``); and the test handlers its service tasks run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpm
from bpm.definitions.bpmn import compile_bpmn
from bpm.engine.operations.deployments import Resource, ResourceKind
from bpm.errors import InvalidDefinition
from bpm.handlers import HandlerContext, HandlerRegistry, HandlerResult
from tests.helpers.runtime import Harness
from tests.integration.conformance.corpus import Manifest, ModelFile, Scenario, model_files
from tests.integration.conformance.differences import OUTCOMES
from tests.integration.conformance.model import Model


@dataclass(frozen=True)
class Refusal:
    """The importer refused one of the case's files: its message, lines joined by "; ",
    after the file's name when it is not the case's own model."""

    message: str


@dataclass(frozen=True)
class Compiled:
    model: Model
    sources: list[tuple[ModelFile, str]]


def compile_case(case: dict[str, Any]) -> Compiled | Refusal:
    """Compile every file the case deploys (checking each against its sha256 and that it
    defines the process the manifest names)."""
    model = Model(main=str(case["process_id"]))
    sources: list[tuple[ModelFile, str]] = []
    for index, file in enumerate(model_files(case)):
        xml = file.read()
        try:
            documents = compile_bpmn(xml)
        except InvalidDefinition as exc:
            message = "; ".join(str(exc).splitlines())
            return Refusal(message if index == 0 else f"{file.path.name}: {message}")
        keys = [doc["key"] for doc in documents]
        assert file.process_id in keys, f"{file.path.name} defines {keys}, not {file.process_id}"
        model.add(documents)
        sources.append((file, xml))
    return Compiled(model, sources)


def refused(manifest: Manifest, case: dict[str, Any], compiled: Compiled | Refusal) -> str | None:
    """The verdict of a case whose model the importer refuses; None when all compiled. For a
    pinned manifest the refusal must be the one ``OUTCOMES`` records, and a model recorded
    there that compiles fails, so the table is updated the day a feature lands."""
    if not manifest.pinned:
        return f"rejected at deploy: {compiled.message}" if isinstance(compiled, Refusal) else None
    pinned = OUTCOMES.get(str(case["id"]))
    if isinstance(compiled, Refusal):
        assert compiled.message.startswith("line "), compiled.message
        assert pinned is not None, f"{case['id']} was rejected: {compiled.message}"
        assert compiled.message.split(": ", 1)[1].startswith(pinned), compiled.message
        return f"rejected at deploy: {pinned}"
    assert pinned is None, f"{case['id']} compiles now; remove it from OUTCOMES ({pinned!r})"
    return None


def deploy(rt: Harness, compiled: Compiled) -> None:
    """All the case's files in one deployment, before the first step (deploy time is the
    scenario's clock zero)."""
    files = [Resource(f.path.name, xml.encode(), ResourceKind.BPMN) for f, xml in compiled.sources]
    rt.engine.deploy_files(files)


def deploy_each(rt: Harness, compiled: Compiled) -> None:
    """Each process of each file (called and companion models first), as a definition of its
    own, then each file again: the second deploy changes nothing."""
    for _, xml in reversed(compiled.sources):
        documents = compile_bpmn(xml)
        for doc in documents:
            deployed = rt.engine.deploy(doc, source=xml, source_format="bpmn")
            assert deployed.created and deployed.key == doc["key"]
        again = rt.engine.deploy_bpmn(xml)
        assert [d.created for d in again] == [False] * len(documents)


def register_handlers(registry: HandlerRegistry, model: Model, scenario: Scenario) -> None:
    """A recorder for every handler name the models use; the activity the scenario's
    ``failing_tasks`` names raises: ``exception`` -> ``RuntimeError(message)`` (every attempt),
    ``bpmn_error`` -> ``bpm.BpmnError(errorCode, message)``."""
    by_node = {str(f["id"]): f for f in scenario.failing}

    def recorder(ctx: HandlerContext) -> HandlerResult:
        failure = by_node.get(model.label(ctx.process_key, ctx.node_id))
        if failure is None:
            return None
        if failure["failure"] == "bpmn_error":
            raise bpm.BpmnError(str(failure["errorCode"]), str(failure.get("message", "")))
        raise RuntimeError(str(failure.get("message") or failure.get("type") or "failure"))

    for name in model.handlers():
        registry.register(name, recorder, replace=True)
