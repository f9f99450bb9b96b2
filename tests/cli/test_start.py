"""``bpm start``: variables from the command line, waiting, and refusing what cannot run."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import uuid4

import pytest

from bpm import HandlerContext, handler
from bpm.demo import ORDER_FULFILMENT
from bpm.handlers import registry
from tests.cli.conftest import Bpm, start_order
from tests.helpers.redis_db import redis_url

ALWAYS_FAILS = "cli_test_always_fails"


def _always_fails(ctx: HandlerContext) -> None:
    raise RuntimeError("this handler never works")


if ALWAYS_FAILS not in registry:
    handler(ALWAYS_FAILS)(_always_fails)

SLOW_RETRY = {
    "key": "slow_retry",
    "nodes": [
        {"id": "s", "type": "startEvent"},
        {
            "id": "work",
            "type": "serviceTask",
            "handler": ALWAYS_FAILS,
            "retry": {"max_attempts": 3, "backoff": "PT5S"},
        },
        {"id": "e", "type": "endEvent"},
    ],
    "flows": [
        {"id": "f1", "source": "s", "target": "work"},
        {"id": "f2", "source": "work", "target": "e"},
    ],
}


@pytest.mark.usefixtures("deployed")
def test_start_wait_json__completes(bpm: Bpm) -> None:
    doc = start_order(bpm, "--var", "total=250", "--business-key", "ORDER-1")
    assert doc["state"] == "COMPLETED"
    assert doc["key"] == "order_fulfilment" and doc["business_key"] == "ORDER-1"
    assert {"id", "key", "business_key", "state"} <= set(doc)


@pytest.mark.usefixtures("deployed")
def test_start__takes_the_express_branch_when_total_is_high(bpm: Bpm) -> None:
    express = start_order(bpm, "--var", "total=250")
    standard = start_order(bpm, "--var", "total=20")
    shown = [bpm.json("show", str(doc["id"])) for doc in (express, standard)]
    carriers = [doc["variables"]["carrier"] for doc in shown if isinstance(doc, dict)]
    assert carriers == ["courier", "post"]


@pytest.mark.usefixtures("deployed")
def test_start__var_values_are_json_when_they_parse(bpm: Bpm) -> None:
    doc = bpm.json(
        "start",
        "order_fulfilment",
        "--wait",
        "20",
        "--vars",
        '{"total": 5, "items": ["x"], "note": "from vars"}',
        "--var",
        "note=plain text",
        "--var",
        "flag=true",
        "--var",
        "code=007",
        "--var",
        "ratio=0.5",
        "--var",
        "weird=NaN",
        "--var",
        "empty=",
    )
    shown = bpm.json("show", str(doc["id"]))  # type: ignore[index]
    assert isinstance(shown, dict)
    values = shown["variables"]
    assert values["note"] == "plain text"  # --var overrides --vars
    assert values["flag"] is True and values["ratio"] == 0.5
    assert values["code"] == "007" and values["weird"] == "NaN" and values["empty"] == ""


@pytest.mark.usefixtures("deployed")
def test_start__without_wait_still_runs_in_embedded_mode(bpm: Bpm) -> None:
    out = bpm.ok("start", "order_fulfilment", "--var", "total=1", "--var", 'items=["a"]').stdout
    assert "started order_fulfilment instance" in out and "COMPLETED" in out


@pytest.mark.usefixtures("deployed")
def test_start__same_business_key_starts_one_instance(bpm: Bpm) -> None:
    first = start_order(bpm, "--var", "total=1", "--business-key", "DUP")
    again = start_order(bpm, "--var", "total=1", "--business-key", "DUP")
    assert again["id"] == first["id"] and again["created"] is False
    assert len(bpm.json("instances", "--business-key", "DUP")) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--var", "no-equals-sign"), "NAME=VALUE"),
        (("--var", "=5"), "NAME=VALUE"),
        (("--vars", "{not json"), "not valid JSON"),
        (("--vars", "[1, 2]"), "JSON object"),
        (("--vars", "@missing.json"), "cannot read"),
        (("--wait", "-1"), "--wait"),
    ],
)
def test_start__bad_variables_are_one_line_errors(
    bpm: Bpm, args: tuple[str, ...], expected: str
) -> None:
    assert expected in bpm.error("start", "order_fulfilment", *args)


def test_start__unknown_key(bpm: Bpm) -> None:
    line = bpm.error("start", "no_such_process")
    assert "no_such_process" in line and "bpm deploy" in line


def test_start__refuses_when_handlers_are_not_registered(bpm: Bpm, tmp_path: Path) -> None:
    doc = json.loads(json.dumps(SLOW_RETRY))
    doc["key"] = "unhandled"
    doc["nodes"][1]["handler"] = "nobody_registers_this"
    path = tmp_path / "unhandled.json"
    path.write_text(json.dumps(doc))
    bpm.ok("deploy", str(path))
    line = bpm.error("start", "unhandled")
    assert "nobody_registers_this" in line and "BPM_IMPORTS" in line
    assert bpm.json("instances") == []


def test_start__refuses_missing_listener_handlers_and_beans(bpm: Bpm, tmp_path: Path) -> None:
    """Every handler, bean and delegate the process will call is checked, not only the
    service tasks' handlers: listeners, an expression's beans, a delegate expression."""
    doc = {
        "key": "needs_beans",
        "nodes": [
            {"id": "s", "type": "startEvent"},
            {
                "id": "work",
                "type": "serviceTask",
                "expression": "${ledgerService.book(execution)}",
                "listeners": [{"event": "end", "handler": "audit_listener_nobody_has"}],
            },
            {"id": "mail", "type": "serviceTask", "delegateExpression": "${mailerBean}"},
            {"id": "set", "type": "serviceTask", "expression": "${execution.setVariable('a', 1)}"},
            {"id": "e", "type": "endEvent"},
        ],
        "flows": [
            {"id": "f1", "source": "s", "target": "work"},
            {"id": "f2", "source": "work", "target": "mail"},
            {"id": "f3", "source": "mail", "target": "set"},
            {"id": "f4", "source": "set", "target": "e"},
        ],
    }
    path = tmp_path / "needs_beans.json"
    path.write_text(json.dumps(doc))
    bpm.ok("deploy", str(path))
    line = bpm.error("start", "needs_beans")
    assert "handler 'audit_listener_nobody_has'" in line
    assert "bean 'ledgerService'" in line and "bean 'mailerBean'" in line
    assert "setVariable" not in line  # an expression is evaluated, never a handler's name
    assert bpm.json("instances") == []


def test_start__import_of_a_missing_module(bpm: Bpm) -> None:
    line = bpm.error("start", "x", "--import", "no_such_module_here")
    assert "no_such_module_here" in line


def test_start__imports_from_bpm_imports(bpm: Bpm, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPM_IMPORTS", "bpm.demo.order_handlers, no_such_module_either")
    assert "no_such_module_either" in bpm.error("start", "x")


def test_start__broker_mode_writes_the_instance_and_sends_its_job(
    bpm: Bpm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No worker listens on this test's queues: the instance stays RUNNING, its job queued."""
    bpm.ok("deploy", str(ORDER_FULFILMENT))
    monkeypatch.setenv("BPM_BROKER_URL", redis_url())
    monkeypatch.setenv("BPM_QUEUE_PREFIX", f"cli-{uuid4().hex[:8]}.")
    doc = bpm.json("start", "order_fulfilment", "--var", "total=5", "--json")
    assert isinstance(doc, dict)
    assert doc["state"] == "RUNNING" and doc["created"] is True


def test_start__wait_timeout_is_an_error_after_printing_the_state(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(SLOW_RETRY))
    bpm.ok("deploy", str(path))
    result = bpm("start", "slow_retry", "--wait", "0.3", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["state"] == "RUNNING"
    assert "still RUNNING" in result.stderr


def test_start__fail_on_failure_exits_3_when_the_instance_ends_failed(
    bpm: Bpm, tmp_path: Path
) -> None:
    doomed = json.loads(json.dumps(SLOW_RETRY).replace('"max_attempts": 3', '"max_attempts": 1'))
    doomed["key"] = "doomed"
    path = tmp_path / "doomed.json"
    path.write_text(json.dumps(doomed))
    bpm.ok("deploy", str(path))
    plain = bpm("start", "doomed", "--wait", "20", "--json")
    assert plain.exit_code == 0 and json.loads(plain.stdout)["state"] == "FAILED"
    flagged = bpm("start", "doomed", "--wait", "20", "--fail-on-failure", "--json")
    assert flagged.exit_code == 3
    doc = json.loads(flagged.stdout)
    assert doc["state"] == "FAILED"
    assert f"instance {doc['id']} ended FAILED" in flagged.stderr
    assert "bpm incidents" in flagged.stderr


@pytest.mark.usefixtures("deployed")
def test_start__fail_on_failure_exits_0_when_the_instance_completes(bpm: Bpm) -> None:
    done = bpm(
        "start",
        "order_fulfilment",
        "--var",
        "total=1",
        "--var",
        'items=["a"]',
        "--wait",
        "20",
        "--fail-on-failure",
    )
    assert done.exit_code == 0 and "COMPLETED" in done.stdout
