"""BPMN conformance, first increment: every model of the shared corpus is imported and deployed.

For each model in ``/work/shared/conformance/manifest.json`` the importer either compiles it and
the engine deploys it (the XML stored as the definition's source), or rejects it with
``InvalidDefinition`` and a message naming a line. Which one happens is recorded in
``OUTCOMES``, so a change in coverage shows up here. Driving the manifest's ``harness`` steps is
the next increment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from tests.helpers.runtime import Harness

SHARED = Path("/work/shared")
MANIFEST = SHARED / "conformance" / "manifest.json"

#: id -> "deployed" or the start of the rejection message (after "line N: ").
OUTCOMES: dict[str, str] = {
    "timer-intermediate-date-from-variable":
        "process 'sid-909dfba4-15dd-47b3-b7d4-88330891429a': node "
        "'sid-AB1683F9-F260-499B-A04C-F7ADA9C64817' (timerEvent): timer 'due_time'",
    "timer-boundary-interrupting-before-join":
        "taskListener '(no id)' (extension element in userTask 'userTask') is not supported yet",
    "comp-activity-inside-subprocess":
        "process 'compensateProcess': node 'throwCompensate' (compensationThrow): 'activity' "
        "'subprocess' must be an activity of the same scope that declares a compensation",
}


def _cases() -> list[dict[str, Any]]:
    if not MANIFEST.is_file():
        return []
    cases: list[dict[str, Any]] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return cases


def _path(case: dict[str, Any]) -> Path:
    return SHARED.parent / case["public_copy"] if "public_copy" in case else \
        SHARED / "conformance" / "public" / Path(case["path"]).name


@pytest.mark.skipif(not MANIFEST.is_file(), reason="/work/shared/conformance is not present")
@pytest.mark.parametrize("case", _cases(), ids=lambda c: str(c["id"]))
def test_model_is_imported_and_deployed_or_clearly_rejected(rt: Harness,
                                                            case: dict[str, Any]) -> None:
    path = _path(case)
    assert path.is_file(), path
    xml = path.read_text(encoding="utf-8")
    expected = OUTCOMES.get(case["id"], "deployed")
    try:
        documents = compile_bpmn(xml)
    except InvalidDefinition as exc:
        message = str(exc)
        assert message.startswith("line "), message
        assert expected != "deployed", f"{case['id']} was rejected: {message}"
        assert message.split(": ", 1)[1].startswith(expected), message
        return
    assert expected == "deployed", f"{case['id']} compiled, but is recorded as rejected"
    assert case["process_id"] in [doc["key"] for doc in documents]
    for doc in documents:
        deployed = rt.engine.deploy(doc, source=xml, source_format="bpmn")
        assert deployed.created and deployed.key == doc["key"]
    again = rt.engine.deploy_bpmn(xml)
    assert [d.created for d in again] == [False] * len(documents)
