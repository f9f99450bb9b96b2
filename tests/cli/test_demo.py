"""``bpm demo`` and the path tree it draws."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from unittest.mock import ANY

import pytest

from bpm.cli import paths
from bpm.cli.invocation import Invocation, bpm_invocation
from bpm.cli.render import ASCII, UNICODE
from tests.cli.conftest import ENV_VARS, Bpm, bpm_executable


def test_demo__runs_the_orders_and_prints_what_happened(bpm: Bpm) -> None:
    out = bpm.ok("demo").stdout
    assert out.count("COMPLETED") >= 4
    assert "charge (attempt 2)" in out and "payment gateway timed out" in out
    assert "ship_express" in out and "ship_standard" in out
    assert "pack_start → pick → wrap → pack_end" in out
    assert "OUT_OF_STOCK" in out
    match = re.search(r"BPM_DATABASE_URL=sqlite:///(\S+)", out)
    assert match and Path(match.group(1)).exists()


def test_demo__the_saga_refunds_then_releases_and_terminates(bpm: Bpm) -> None:
    out = bpm.ok("demo").stdout
    assert "deployed order_saga version 1" in out
    assert re.search(r"^ORDER-2001 +\w{8} +TERMINATED$", out, re.MULTILINE)
    assert "start → reserve → charge → ship ✗" in out
    assert "completed payments at charge, then refunds at charge" in out
    assert "ShippingFailed" in out
    assert (
        "compensated, latest success first: charge (topic refunds) → "
        "reserve (handler release_stock)"
    ) in out
    assert "ORDER-2001 is TERMINATED: ship failed, its saga compensated charge, then reserve" in out


def test_demo__the_saga_drawn_in_bpmn_compensates_the_same_way(
    bpm: Bpm, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = bpm.ok("demo").stdout
    assert re.search(r"^deployed order_saga version 2 from \S+order_saga\.bpmn$", out, re.MULTILINE)
    story = out[out.index("order_saga.bpmn") :]
    assert re.search(r"^ORDER-2002 +\w{8} +TERMINATED$", story, re.MULTILINE)
    assert "start → reserve → charge → ship ✗" in story
    assert "completed payments at charge, then refunds at charge" in story
    assert (
        "compensated, latest success first: charge (topic refunds) → "
        "reserve (handler release_stock)"
    ) in story
    assert "ORDER-2002 is TERMINATED: ship failed, its saga compensated charge, then reserve" in out
    match = re.search(r"BPM_DATABASE_URL=(\S+)", out)
    assert match
    monkeypatch.setenv("BPM_DATABASE_URL", match.group(1))
    found = bpm.json("instances", "--business-key", "ORDER-2002")
    assert isinstance(found, list) and len(found) == 1
    saga = found[0]
    shown = bpm.json("show", saga["id"])
    assert isinstance(shown, dict)
    assert (shown["state"], shown["definition_version"]) == ("TERMINATED", 2)
    trace = bpm.json("trace", saga["id"])
    assert isinstance(trace, list)
    # the handler activities of the diagram ran the same handler and topic, latest success first
    undo = {
        e["token_id"]
        for e in trace
        if e["kind"] == "token"
        and e["type"] == "CREATED"
        and e["data"].get("mode") == "COMPENSATION"
    }
    assert [
        (e["node_id"], e["data"])
        for e in trace
        if e["kind"] == "engine" and e["type"] == "CompensationTokenCreated"
    ] == [
        ("charge", {"record_id": ANY, "seq": 2, "handler": "node:refund"}),
        ("reserve", {"record_id": ANY, "seq": 1, "handler": "node:release"}),
    ]
    assert [
        (e["node_id"], e["data"])
        for e in trace
        if e["kind"] == "task" and e["type"] == "CREATED" and e["token_id"] in undo
    ] == [
        ("charge", {"topic": "refunds", "max_attempts": 1}),
        ("reserve", {"handler": "release_stock", "max_attempts": 1}),
    ]
    assert [e["node_id"] for e in trace if e["type"] == "CompensationCompleted"] == [
        "charge",
        "reserve",
    ]
    assert [e["type"] for e in trace if e["kind"] == "engine"][-2:] == [
        "SagaCompleted",
        "InstanceTerminated",
    ]


def test_demo__database_is_explorable_afterwards(bpm: Bpm, monkeypatch: pytest.MonkeyPatch) -> None:
    out = bpm.ok("demo").stdout
    match = re.search(r"BPM_DATABASE_URL=(\S+)", out)
    assert match
    monkeypatch.setenv("BPM_DATABASE_URL", match.group(1))
    found = bpm.json("instances")
    assert isinstance(found, list) and len(found) == 7
    (saga,) = [i for i in found if i["business_key"] == "ORDER-2001"]
    assert saga["state"] == "TERMINATED"
    trace = bpm.json("trace", saga["id"])
    assert isinstance(trace, list)
    assert [e["node_id"] for e in trace if e["type"] == "CompensationCompleted"] == [
        "charge",
        "reserve",
    ]  # the refund before the release: latest success first
    assert [e["type"] for e in trace if e["kind"] == "engine"][-2:] == [
        "SagaCompleted",
        "InstanceTerminated",
    ]


def _event(kind: str, type_: str, node: str, token: str, **data: object) -> dict[str, object]:
    out: dict[str, object] = {
        "kind": kind,
        "type": type_,
        "node_id": node,
        "token_id": token,
        "data": data,
    }
    if kind == "task":
        out["task_id"] = f"task-{token}-{node}"
    return out


def test_paths__fork_subprocess_and_retry() -> None:
    events = [
        _event("token", "CREATED", "start", "root", parent=None),
        _event("token", "MOVED", "split", "root", **{"from": "start"}),
        _event("token", "CREATED", "a", "t1", parent="root"),
        _event("token", "CREATED", "sub", "t2", parent="root"),
        # task events of one transaction may come back before the token's MOVED
        _event("task", "LOCKED", "a", "t1", attempt=1),
        _event("task", "FAILED", "a", "t1", attempt=1, error="boom"),
        _event("task", "LOCKED", "a", "t1", attempt=2),
        _event("token", "MOVED", "join", "t1", **{"from": "a"}),
        _event("token", "CREATED", "sub_start", "t3", parent="t2"),
        _event("token", "MOVED", "sub_end", "t3", **{"from": "sub_start"}),
        _event("token", "MOVED", "join", "t2", **{"from": "sub"}),
        _event("token", "MOVED", "end", "root", **{"from": "join"}),
    ]
    tree = paths.build(events)
    assert paths.render(tree, UNICODE) == [
        "start → split",
        "├─ a (attempt 2) → join",
        "└─ sub",
        "   └─ sub_start → sub_end",
        "   → join",
        "→ join → end",
    ]
    assert [s.errors for s in tree.steps() if s.attempts > 1] == [["attempt 1: boom"]]


def test_paths__failed_step_is_marked_in_ascii_too() -> None:
    events = [
        _event("token", "CREATED", "start", "root", parent=None),
        _event("token", "MOVED", "work", "root", **{"from": "start"}),
        _event("token", "FAILED", "work", "root"),
    ]
    assert paths.render(paths.build(events), ASCII) == ["start -> work x"]


# --- the commands the demo suggests --------------------------------------------------------


def _script(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_invocation__a_virtualenv_script_off_path_is_named_by_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make demo`` runs ``.venv/bin/bpm demo`` with the virtualenv not active."""
    _script(tmp_path / ".venv" / "bin" / "bpm")
    (tmp_path / ".venv" / "bin" / "activate").write_text("")
    monkeypatch.chdir(tmp_path)
    found = bpm_invocation(".venv/bin/bpm", search_path=str(tmp_path / "elsewhere"))
    assert found == Invocation(".venv/bin/bpm", "source .venv/bin/activate")
    absolute = str(tmp_path / ".venv" / "bin" / "bpm")
    assert bpm_invocation(absolute, search_path="").command == absolute


def test_invocation__the_script_on_path_is_plain_bpm(tmp_path: Path) -> None:
    script = _script(tmp_path / "bin" / "bpm")
    assert bpm_invocation(str(script), search_path=str(script.parent)) == Invocation("bpm")
    other = _script(tmp_path / "other" / "bpm")  # another installation's bpm comes first
    assert bpm_invocation(str(script), search_path=str(other.parent)).command == str(script)


def test_invocation__python_m_names_this_installation(tmp_path: Path) -> None:
    """``python -m bpm.cli`` (or a program running the CLI): the script beside the interpreter,
    else the interpreter itself."""
    found = bpm_invocation(str(tmp_path / "bpm" / "cli" / "__main__.py"), search_path="")
    beside = Path(sys.executable).parent / "bpm"
    if beside.is_file():
        assert found.command == shlex.quote(str(beside.absolute()))
    else:
        assert found == Invocation(f"{shlex.quote(sys.executable)} -m bpm.cli")


def test_demo__the_commands_it_suggests_run_as_printed(tmp_path: Path) -> None:
    """Run the installed script with its folder off PATH, as after ``make demo``: every
    command the demo prints must work when pasted into a shell."""
    [script] = bpm_executable()[:1]
    if Path(script).name != "bpm":
        pytest.skip("no bpm console script is installed beside this interpreter")
    path = os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not (Path(d) / "bpm").exists()
    )
    env = {
        **{k: v for k, v in os.environ.items() if k not in ENV_VARS},
        "PATH": path,
        "TMPDIR": str(tmp_path),
    }
    demo = subprocess.run(
        [script, "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert demo.returncode == 0, demo.stderr
    hints = demo.stdout[demo.stdout.index("explore the run") :].splitlines()[1:]
    export = hints[0].split()
    assert export[0] == "export"
    name, _, value = export[1].partition("=")
    env[name] = value
    commands = [shlex.split(h.split("#")[0]) for h in hints[1:] if h.startswith("  ")]
    assert len(commands) == 6 and commands[0][1:] == ["instances"]
    assert commands[0][0] == script  # its path: plain "bpm" is not found
    for argv in commands:
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, (argv, done.stderr)
    assert (
        "ORDER-1005"
        in subprocess.run(
            commands[0],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    activate = Path(script).parent / "activate"
    if activate.is_file():
        assert f"`source {activate}`" in demo.stdout
