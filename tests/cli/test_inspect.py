"""``instances``, ``show``, ``trace``, ``incidents``, ``retry``, ``cancel``: shapes and errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bpm import HandlerContext, handler
from bpm.handlers import registry
from tests.cli.conftest import Bpm, start_order

SWITCH = {"broken": True}
FLAKY = "cli_test_switchable"
UNKNOWN_ID = "3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77"


def _switchable(ctx: HandlerContext) -> dict[str, Any]:
    if SWITCH["broken"]:
        raise RuntimeError("the switch is off")
    return {"worked": True}


if FLAKY not in registry:
    handler(FLAKY)(_switchable)

ONE_STEP = {
    "key": "one_step",
    "nodes": [
        {"id": "s", "type": "startEvent"},
        {"id": "work", "type": "serviceTask", "handler": FLAKY},
        {"id": "e", "type": "endEvent"},
    ],
    "flows": [
        {"id": "f1", "source": "s", "target": "work"},
        {"id": "f2", "source": "work", "target": "e"},
    ],
}


def _dict(value: object) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


def _list(value: object) -> list[dict[str, Any]]:
    assert isinstance(value, list)
    return value


@pytest.fixture
def failing(bpm: Bpm, tmp_path: Path) -> dict[str, Any]:
    """A deployed one-step process and one instance of it that FAILED."""
    SWITCH["broken"] = True
    path = tmp_path / "one_step.json"
    path.write_text(json.dumps(ONE_STEP))
    bpm.ok("deploy", str(path))
    return _dict(bpm.json("start", "one_step", "--wait", "10"))


@pytest.mark.usefixtures("deployed")
def test_show_json__has_the_documented_fields(bpm: Bpm) -> None:
    started = start_order(bpm, "--var", "total=150", "--business-key", "SHOW-1")
    doc = _dict(bpm.json("show", str(started["id"])))
    for name in (
        "id",
        "key",
        "business_key",
        "state",
        "tokens",
        "tasks",
        "timers",
        "variables",
        "incidents",
    ):
        assert name in doc
    assert doc["id"] == started["id"] and doc["state"] == "COMPLETED"
    assert doc["business_key"] == "SHOW-1" and doc["variables"]["total"] == 150
    assert {t["node_id"] for t in doc["tasks"]} >= {"reserve", "charge", "pick", "wrap"}


@pytest.mark.usefixtures("deployed")
def test_show__human_output_draws_the_path(bpm: Bpm) -> None:
    started = start_order(bpm, "--var", "total=150", "--var", "payment_glitch=true")
    out = bpm.ok("show", str(started["id"])).stdout
    assert "COMPLETED" in out and "charge (attempt 2)" in out
    assert "pack_start" in out and "ship_express" in out


@pytest.mark.usefixtures("deployed")
def test_trace_json__events_in_order_with_at_type_node_id(bpm: Bpm) -> None:
    started = start_order(bpm, "--var", "total=10")
    events = _list(bpm.json("trace", str(started["id"])))
    assert all({"at", "type", "node_id"} <= set(e) for e in events)
    stamps = [e["at"] for e in events]
    assert stamps == sorted(stamps)
    types = [e["type"] for e in events]
    assert "InstanceStarted" in types and "InstanceCompleted" in types
    moved_to = {e["node_id"] for e in events if e["type"] == "MOVED"}
    assert {"validate", "split", "join", "ship_standard", "done"} <= moved_to


@pytest.mark.usefixtures("deployed")
def test_trace__human_output_is_a_table(bpm: Bpm) -> None:
    started = start_order(bpm, "--var", "total=10")
    out = bpm.ok("trace", str(started["id"])).stdout
    assert out.splitlines()[0].split() == ["at", "type", "node", "token", "detail"]
    assert "InstanceCompleted" in out


@pytest.mark.usefixtures("deployed")
def test_instances__filters_by_state_and_key(bpm: Bpm, failing: dict[str, Any]) -> None:
    done = start_order(bpm, "--var", "total=10")
    assert failing["state"] == "FAILED"
    everything = _list(bpm.json("instances"))
    assert {i["id"] for i in everything} == {done["id"], failing["id"]}
    assert all({"id", "key", "business_key", "state"} <= set(i) for i in everything)
    assert all("tokens" not in i for i in everything)
    failed = _list(bpm.json("instances", "--state", "failed"))
    assert [i["id"] for i in failed] == [failing["id"]]
    by_key = _list(bpm.json("instances", "--key", "order_fulfilment"))
    assert [i["id"] for i in by_key] == [done["id"]]
    assert bpm.json("instances", "--state", "CANCELLED") == []
    assert "not a state" in bpm.error("instances", "--state", "sleeping")


def test_instances__human_output_when_empty(bpm: Bpm) -> None:
    assert "(no instances)" in bpm.ok("instances").stdout


@pytest.mark.parametrize("command", ["show", "trace", "cancel"])
def test_unknown_instance_id__one_line_error(bpm: Bpm, command: str) -> None:
    line = bpm.error(command, UNKNOWN_ID)
    assert UNKNOWN_ID in line and "does not exist" in line


@pytest.mark.parametrize("command", ["show", "trace", "cancel", "retry"])
def test_malformed_id__one_line_error(bpm: Bpm, command: str) -> None:
    line = bpm.error(command, "not-a-uuid")
    assert "'not-a-uuid'" in line and "UUID" in line


def test_incidents_and_retry__a_fixed_handler_completes_the_instance(
    bpm: Bpm, failing: dict[str, Any]
) -> None:
    incidents = _list(bpm.json("incidents"))
    assert len(incidents) == 1 and incidents[0]["instance_id"] == failing["id"]
    assert "the switch is off" in incidents[0]["message"]
    assert "Traceback" in incidents[0]["details"]  # the handler's traceback is kept
    shown = bpm.ok("incidents", "--details").stdout
    assert f"incident {incidents[0]['id']}" in shown and "Traceback" in shown
    assert "Traceback" not in bpm.ok("incidents").stdout
    SWITCH["broken"] = False
    retried = _dict(bpm.json("retry", incidents[0]["token_id"]))
    assert retried == {
        "token_id": incidents[0]["token_id"],
        "instance_id": failing["id"],
        "state": "COMPLETED",
    }
    assert bpm.json("incidents") == []


def test_retry__by_task_id_and_retrying_a_live_token_is_refused(
    bpm: Bpm, failing: dict[str, Any]
) -> None:
    task_id = _dict(bpm.json("show", str(failing["id"])))["tasks"][0]["id"]
    out = bpm.ok("retry", task_id).stdout  # still broken: fails again
    assert "FAILED" in out
    SWITCH["broken"] = False
    assert "COMPLETED" in bpm.ok("retry", task_id, "--retries", "2").stdout
    assert "only FAILED tokens" in bpm.error("retry", task_id)
    assert "no token or task" in bpm.error("retry", UNKNOWN_ID)
    assert "--retries" in bpm.error("retry", task_id, "--retries", "0")


def test_cancel__a_failed_instance_and_not_twice(bpm: Bpm, failing: dict[str, Any]) -> None:
    assert "cancelled" in bpm.ok("cancel", str(failing["id"])).stdout
    assert _dict(bpm.json("show", str(failing["id"])))["state"] == "CANCELLED"
    assert bpm.json("incidents") == []
    assert "CANCELLED" in bpm.error("cancel", str(failing["id"]))


def test_unknown_command_and_option__one_line_errors(bpm: Bpm) -> None:
    assert "No such command" in bpm.error("frobnicate")
    assert "No such option" in bpm.error("instances", "--colour")
    assert "Missing argument" in bpm.error("show")


def test_help_and_version(bpm: Bpm) -> None:
    out = bpm.ok("--help").stdout
    for name in (
        "db",
        "deploy",
        "start",
        "instances",
        "show",
        "trace",
        "incidents",
        "retry",
        "cancel",
        "demo",
        "BPM_IMPORTS",
    ):
        assert name in out
    assert "0.1.0" in bpm.ok("--version").stdout


def test_resolve__closes_the_incident_and_keeps_the_token_failed(
    bpm: Bpm, failing: dict[str, Any]
) -> None:
    (incident,) = _list(bpm.json("incidents"))
    out = bpm.ok("resolve", incident["id"], "--note", "fixed by hand").stdout
    assert "resolved" in out
    assert _list(bpm.json("incidents")) == []
    shown = _dict(bpm.json("show", failing["id"]))
    assert [t["state"] for t in shown["tokens"]] == ["FAILED"]
    assert any(
        e["type"] == "OperatorResolved" and e.get("data", {}).get("note") == "fixed by hand"
        for e in _list(bpm.json("trace", failing["id"]))
    )
    assert "no open incident" in bpm.error("resolve", incident["id"])
    assert "is not an incident or token id" in bpm.error("resolve", "nope")


def _tasks_table(out: str) -> list[list[str]]:
    """The rows of ``bpm show``'s tasks section, header first, split on runs of spaces."""
    lines = out[out.index("\ntasks\n") + len("\ntasks\n") :].split("\n\n", 1)[0].splitlines()
    return [line.split() for line in lines]


def test_show__labels_an_external_tasks_topic_as_topic(bpm: Bpm, tmp_path: Path) -> None:
    """A handler runs in a bpm process, an external task waits for a worker of its topic: the
    table says which one it is looking at."""
    SWITCH["broken"] = False
    doc: dict[str, Any] = {
        "key": "mixed",
        "nodes": [
            {"id": "s", "type": "startEvent"},
            {"id": "prepare", "type": "serviceTask", "handler": FLAKY},
            {"id": "charge", "type": "serviceTask", "topic": "payments"},
            {"id": "e", "type": "endEvent"},
        ],
        "flows": [
            {"id": "f1", "source": "s", "target": "prepare"},
            {"id": "f2", "source": "prepare", "target": "charge"},
            {"id": "f3", "source": "charge", "target": "e"},
        ],
    }
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(doc))
    bpm.ok("deploy", str(path))
    started = _dict(bpm.json("start", "mixed"))
    header, *rows = _tasks_table(bpm.ok("show", str(started["id"])).stdout)
    assert header[:5] == ["id", "node", "handler", "topic", "state"]
    by_node = {row[1]: row for row in rows}
    assert by_node["prepare"][2:5] == [FLAKY, "-", "DONE"]
    assert by_node["charge"][2:5] == ["-", "payments", "READY"]

    only_external = {
        "key": "only_external",
        "nodes": [n for n in doc["nodes"] if n["id"] != "prepare"],
        "flows": [
            {"id": "f1", "source": "s", "target": "charge"},
            {"id": "f3", "source": "charge", "target": "e"},
        ],
    }
    path.write_text(json.dumps(only_external))
    bpm.ok("deploy", str(path))
    waiting = _dict(bpm.json("start", "only_external"))
    header, row = _tasks_table(bpm.ok("show", str(waiting["id"])).stdout)
    assert header[:4] == ["id", "node", "topic", "state"] and "handler" not in header
    assert row[1:4] == ["charge", "payments", "READY"]


@pytest.mark.usefixtures("deployed")
def test_show__an_instance_of_handler_tasks_keeps_its_handler_column(bpm: Bpm) -> None:
    started = start_order(bpm, "--var", "total=10")
    header, *rows = _tasks_table(bpm.ok("show", str(started["id"])).stdout)
    assert header == ["id", "node", "handler", "state", "attempts", "retries", "left", "error"]
    assert {row[2] for row in rows} >= {"reserve_stock", "charge_payment"}
