"""The installed ``bpm`` console script, run as a real process (as a user or a script would)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from bpm.demo import ORDER_FULFILMENT
from tests.cli.conftest import ENV_VARS, command, one_error_line


def run(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    return subprocess.run(
        command(*args),
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_console_script__deploy_start_trace(tmp_path: Path) -> None:
    env = {
        "BPM_DATABASE_URL": f"sqlite:///{tmp_path / 'p.db'}",
        "BPM_IMPORTS": "bpm.demo.order_handlers",
    }
    deployed = run(tmp_path, "deploy", str(ORDER_FULFILMENT), "--json", env=env)
    assert deployed.returncode == 0, deployed.stderr
    assert json.loads(deployed.stdout)["version"] == 1
    started = run(
        tmp_path,
        "start",
        "order_fulfilment",
        "--var",
        "total=120",
        "--var",
        'items=["globe"]',
        "--wait",
        "20",
        "--json",
        env=env,
    )
    assert started.returncode == 0, started.stderr
    doc = json.loads(started.stdout)
    assert doc["state"] == "COMPLETED"
    traced = run(tmp_path, "trace", doc["id"], "--json", env=env)
    assert traced.returncode == 0, traced.stderr
    assert any(e["node_id"] == "ship_express" for e in json.loads(traced.stdout))
    assert "INFO" not in deployed.stderr + started.stderr + traced.stderr


def test_console_script__default_database_is_bpm_db_in_the_working_folder(tmp_path: Path) -> None:
    assert run(tmp_path, "instances", "--json").stdout.strip() == "[]"
    assert (tmp_path / "bpm.db").exists()


def test_console_script__bad_input_is_one_line_on_stderr(tmp_path: Path) -> None:
    env = {"BPM_DATABASE_URL": f"sqlite:///{tmp_path / 'p.db'}"}
    for args in (
        ("show", "nope"),
        ("start", "ghost"),
        ("deploy", "missing.json"),
        ("start", "x", "--var", "bad"),
    ):
        result = run(tmp_path, *args, env=env)
        assert result.returncode != 0
        one_error_line(result.stderr, result.stdout)
        assert result.stdout == ""


def test_console_script__demo(tmp_path: Path) -> None:
    result = run(tmp_path, "demo", env={"TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "COMPLETED" in result.stdout and "charge (attempt 2)" in result.stdout
    assert list(tmp_path.glob("bpm-demo-*/demo.db"))


def test_start_from_python_example(tmp_path: Path) -> None:
    import sys

    # examples/ is read from the checkout (it is not installed)
    root = str(Path(__file__).resolve().parents[2])
    base = {k: v for k, v in os.environ.items() if k not in ENV_VARS} | {"PYTHONPATH": root}
    result = subprocess.run(
        [sys.executable, "-m", "examples.start_from_python"],
        cwd=tmp_path,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "is COMPLETED" in result.stdout and '"carrier": "courier"' in result.stdout
