"""The end of a run compared with the scenario's expectations, and the scenario's verdict."""

from __future__ import annotations

from typing import Any

from tests.integration.conformance.differences import DIFFERENCES
from tests.integration.conformance.driver import Run
from tests.integration.conformance.logs import compensation_log, completion_log, matches_in_order

#: The corpus's error kinds (``expected_error.kind``, prose) -> this engine's incident kind.
ERROR_KINDS = {"no outgoing flow condition true and no default flow": "no-path"}


def final_checks(run: Run) -> dict[str, tuple[Any, Any]]:
    """Every expectation of the scenario -> (peer's value, this engine's value)."""
    history = run.history()
    log = completion_log(run.model, history)
    expected = run.scenario.expected
    out: dict[str, tuple[Any, Any]] = {}
    if "completed_in_order" in expected:
        want = expected["completed_in_order"]
        # activities whose position the peer does not fix are checked by completed_any_order
        unplaced = set(expected.get("completed_any_order", []))
        placed = [n for n in log if n not in unplaced]
        out["completed_in_order"] = (want, want if matches_in_order(want, placed) else placed)
    if expected.get("completed_any_order"):
        want = sorted(expected["completed_any_order"])
        out["completed_any_order"] = (want, sorted(n for n in want if n in log))
    if "not_completed" in expected:
        out["not_completed"] = ([], [n for n in expected["not_completed"] if n in log])
    if "compensations_in_order" in expected:
        want = expected["compensations_in_order"]
        got = compensation_log(run.model, history)
        out["compensations_in_order"] = (want, want if matches_in_order(want, got) else got)
    if "active_at_end" in expected:
        out["active_at_end"] = (sorted(expected["active_at_end"]), run.active())
    if "final_state" in expected and run.scenario.final_state_asserted:
        out["final_state"] = (expected["final_state"], run.final_state())
    if "error" in expected:
        out["error"] = (expected["error"], error_seen(run, expected["error"]))
    return out


def error_seen(run: Run, want: dict[str, Any]) -> dict[str, Any] | None:
    """The run's error in the shape of ``want``: the error a step's call raised, else the
    first open incident. ``at``: its activity; ``kind``: the corpus's kind when this engine's
    kind is the one ``ERROR_KINDS`` maps it to; ``message_contains``: the text when the
    message contains it (case aside), else the message."""
    if run.error is not None:
        exc = run.error.error
        at, kind, message = getattr(exc, "element", None), type(exc).__name__, str(exc)
    else:
        found = [
            (run.model.label(str(inst["key"]), i["node_id"]), i["kind"], i["message"])
            for inst in run.instances()
            for i in run.rt.engine.show(inst["id"])["incidents"]
            if i["state"] == "OPEN"
        ]
        if not found:
            return None
        at, kind, message = found[0]
    got: dict[str, Any] = {}
    if "at" in want:
        got["at"] = at
    if "kind" in want:
        got["kind"] = want["kind"] if ERROR_KINDS.get(want["kind"]) == kind else kind
    if "message_contains" in want:
        text = str(want["message_contains"])
        got["message_contains"] = text if text.lower() in str(message).lower() else message
    return got


def problems(scenario_id: str, checks: dict[str, tuple[Any, Any]]) -> list[str]:
    """Each check that disagrees and is not a documented difference, and each documented
    difference that no longer holds."""
    known = DIFFERENCES.get(scenario_id, {})
    found = [
        f"{name}: peer {want!r}, engine {got!r}"
        for name, (want, got) in checks.items()
        if want != got and name not in known
    ]
    for name, difference in known.items():
        want, got = checks.get(name, (None, None))
        if want == got:
            found.append(f"{name}: documented as a difference but agrees with the peer")
        elif got != difference.engine:
            found.append(f"{name}: documented engine value {difference.engine!r}, got {got!r}")
    return found


def verdict(scenario_id: str) -> str:
    known = DIFFERENCES.get(scenario_id, {})
    return "documented difference (" + "; ".join(known) + ")" if known else "passed"
