"""The corpus's manifests: their cases, each case's scenarios, and an audit of every field.

Every field a manifest holds is either read by the harness (run or checked) or listed in
``DESCRIPTIVE`` with what it says; any other field is a problem the scenario fails with, so a
field the corpus adds is never ignored silently.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.shared import CONFORMANCE, SHARED


@dataclass(frozen=True)
class Manifest:
    """One manifest file. ``label`` prefixes its scenario ids (none for ``manifest.json``, so
    those keep the ids they always had). ``pinned``: the models the importer refuses are
    pinned in ``differences.OUTCOMES``; otherwise a refusal is read at run time, so a case
    starts running the day its feature lands."""

    name: str
    label: str
    pinned: bool

    @property
    def path(self) -> Path:
        return CONFORMANCE / self.name

    def cases(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        cases: list[dict[str, Any]] = json.loads(self.path.read_text(encoding="utf-8"))
        return cases

    def case_id(self, case: dict[str, Any]) -> str:
        return f"{self.label}:{case['id']}" if self.label else str(case["id"])


MANIFESTS = (
    Manifest("manifest.json", "", pinned=True),
    Manifest("manifest-scopes-and-events.json", "scopes-and-events", pinned=False),
)

#: What the harness compares, each read from ``expected_<name>`` (``checks.final_checks``).
EXPECTATIONS = (
    "completed_in_order",
    "completed_any_order",
    "not_completed",
    "compensations_in_order",
    "active_at_end",
    "final_state",
    "error",
)
FINAL_STATES = {"completed", "terminated", "error", "incident", "waiting"}

#: Fields that say where a case comes from or comment on it; nothing in them is run or
#: checked, and why.
DESCRIPTIVE: dict[str, str] = {
    "group": "the corpus's grouping of the cases",
    "repo": "provenance: the peer's repository",
    "commit": "provenance: the peer's commit",
    "blob": "provenance: the model's git blob (its content is checked by sha256)",
    "source_test": "provenance: the peer test whose assertions the expectations are",
    "source_kind": "provenance: what kind of source the peer test is",
    "elements": "the elements the model uses; the importer reads the model itself",
    "features": "the features the case is about",
    "elements_outside_subset": "the elements beyond the target subset (README)",
    "notes": "commentary (README: fields named notes are commentary)",
    "project_spec_note": "where the spec was expected to differ; differences.DIFFERENCES pins "
    "the ones that are real",
    "peer_specific_semantics": "marks an outcome resting on the peer's own semantics; "
    "differences.DIFFERENCES pins where this engine differs",
}
#: Fields of a case the harness reads (besides ``expected_*``).
CASE_FIELDS = {
    "id",
    "process_id",
    "path",
    "public_copy",
    "sha256",
    "inputs",
    "failing_tasks",
    "harness",
    "additional_scenarios",
    "activity_names",
    "called_models",
    "companion_models",
    "auto_start",
    "final_state_asserted",
}
#: Fields of an ``additional_scenarios`` entry the harness reads (besides ``expected_*``).
SCENARIO_FIELDS = {"name", "inputs", "harness", "failing_tasks", "notes"}
#: Fields of a ``called_models`` / ``companion_models`` entry: the harness deploys
#: ``public_copy`` (checked against ``sha256``) and checks it defines ``process_id``.
MODEL_FIELDS = {"process_id", "public_copy", "sha256", "path", "blob", "elements"}
FAILURE_FIELDS = {"id", "failure", "errorCode", "message", "type", "always"}
ERROR_FIELDS = {"at", "kind", "message_contains"}


@dataclass
class Scenario:
    """One run of a case: the manifest's ``harness``, or one of ``additional_scenarios``
    (which take the case's harness, inputs and failing tasks unless they give their own)."""

    id: str
    manifest: Manifest
    case: dict[str, Any]
    harness: list[str]
    inputs: dict[str, Any]
    failing: list[dict[str, Any]]
    expected: dict[str, Any]
    #: Fields the harness does not understand: the scenario fails with them.
    problems: list[str]

    @property
    def auto_start(self) -> bool:
        return bool(self.case.get("auto_start", True))

    @property
    def final_state_asserted(self) -> bool:
        return bool(self.case.get("final_state_asserted", True))


@dataclass(frozen=True)
class ModelFile:
    """A file a case deploys: its own model, a called model or a companion model."""

    path: Path
    sha256: str | None
    process_id: str

    def read(self) -> str:
        content = self.path.read_bytes()
        digest = hashlib.sha256(content).hexdigest()
        assert self.sha256 in (None, digest), f"{self.path} has sha256 {digest}, not {self.sha256}"
        return content.decode("utf-8")


def _file(entry: dict[str, Any]) -> ModelFile:
    path = (
        SHARED.parent / entry["public_copy"]
        if "public_copy" in entry
        else CONFORMANCE / "public" / Path(entry["path"]).name
    )
    return ModelFile(path, entry.get("sha256"), str(entry["process_id"]))


def model_files(case: dict[str, Any]) -> list[ModelFile]:
    """The case's model first, then its called and companion models (README)."""
    extra = [*case.get("called_models", []), *case.get("companion_models", [])]
    return [_file(case), *(_file(entry) for entry in extra)]


def _unknown(run: dict[str, Any], known: set[str], where: str) -> list[str]:
    return [
        f"{where}: field {name!r} is not understood by the harness"
        for name in run
        if name not in known
        and not (name.startswith("expected_") and name.removeprefix("expected_") in EXPECTATIONS)
    ]


def _audit_values(run: dict[str, Any], where: str) -> list[str]:
    problems: list[str] = []
    for failure in run.get("failing_tasks", []):
        problems += _unknown(failure, FAILURE_FIELDS, f"{where} failing_tasks")
        if failure.get("failure") not in ("exception", "bpmn_error"):
            problems.append(f"{where}: failure {failure.get('failure')!r} is not understood")
        if failure.get("always", True) is not True:
            problems.append(f"{where}: a task failing only sometimes is not understood")
    if run.get("expected_error") is not None:
        problems += _unknown(run["expected_error"], ERROR_FIELDS, f"{where} expected_error")
    if "expected_final_state" in run and run["expected_final_state"] not in FINAL_STATES:
        problems.append(f"{where}: final state {run['expected_final_state']!r} is not understood")
    return problems


def audit(case: dict[str, Any]) -> list[str]:
    """The case's fields (and its models' and failures') that the harness does not read."""
    problems = _unknown(case, CASE_FIELDS | set(DESCRIPTIVE), "case")
    for kind in ("called_models", "companion_models"):
        for entry in case.get(kind, []):
            problems += _unknown(entry, MODEL_FIELDS, kind)
    if not isinstance(case.get("auto_start", True), bool):
        problems.append(f"case: auto_start {case['auto_start']!r} is not understood")
    return problems + _audit_values(case, "case")


def scenarios_of(manifest: Manifest, case: dict[str, Any]) -> list[Scenario]:
    case_problems = audit(case)
    runs = [dict(case, name=None)] + [dict(extra) for extra in case.get("additional_scenarios", [])]
    out: list[Scenario] = []
    for index, run in enumerate(runs):
        base = manifest.case_id(case)
        sid = base if index == 0 else f"{base}/{run.get('name') or index}"
        problems = list(case_problems)
        if index:
            problems += _unknown(run, SCENARIO_FIELDS, "scenario") + _audit_values(run, "scenario")
        expected = {
            name: run[f"expected_{name}"]
            for name in EXPECTATIONS
            if run.get(f"expected_{name}") is not None
        }
        out.append(
            Scenario(
                sid,
                manifest,
                case,
                list(run.get("harness", case["harness"])),
                dict(run.get("inputs", case.get("inputs", {}))),
                list(run.get("failing_tasks", case.get("failing_tasks", []))),
                expected,
                problems,
            )
        )
    return out


def cases() -> list[tuple[Manifest, dict[str, Any]]]:
    return [(manifest, case) for manifest in MANIFESTS for case in manifest.cases()]


def scenarios() -> list[Scenario]:
    return [s for manifest, case in cases() for s in scenarios_of(manifest, case)]


def missing() -> list[Manifest]:
    """The manifests that are not there (their cases skip, saying so)."""
    return [manifest for manifest in MANIFESTS if not manifest.path.is_file()]
