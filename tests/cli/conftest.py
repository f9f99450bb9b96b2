"""Fixtures for the CLI tests: an SQLite file per test, a runner, the ``bpm`` executable.

The CLI reads its configuration from the environment, so every test points
``BPM_DATABASE_URL`` at its own file and clears the variables that change behaviour.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bpm.cli.main import cli
from bpm.demo import (
    ORDER_FULFILMENT,
    order_handlers,  # noqa: F401  (registers the demo's handlers)
)

ENV_VARS = ("BPM_DATABASE_URL", "BPM_BROKER_URL", "BPM_IMPORTS", "BPM_DEBUG", "BPM_QUEUE_PREFIX")


class Bpm:
    """Runs ``bpm`` in-process with click's CliRunner."""

    def __init__(self, runner: CliRunner) -> None:
        self.runner = runner

    def __call__(self, *args: str) -> Result:
        return self.runner.invoke(cli, list(args), prog_name="bpm")

    def ok(self, *args: str) -> Result:
        result = self(*args)
        assert result.exit_code == 0, (result.output, result.exception)
        return result

    def json(self, *args: str) -> object:
        return json.loads(self.ok(*args, "--json").stdout)

    def error(self, *args: str) -> str:
        """Run a command that must fail; return its single ``error:`` line."""
        result = self(*args)
        assert result.exit_code != 0, result.output
        return one_error_line(result.stderr, result.stdout)


def one_error_line(stderr: str, stdout: str = "") -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr + stdout
    return lines[0]


@pytest.fixture
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("BPM_DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # bpm demo's database goes here
    return url


@pytest.fixture
def bpm(db_url: str) -> Bpm:
    return Bpm(CliRunner())


@pytest.fixture
def deployed(bpm: Bpm) -> dict[str, object]:
    doc = bpm.json("deploy", str(ORDER_FULFILMENT))
    assert isinstance(doc, dict)
    return doc


def start_order(bpm: Bpm, *extra: str) -> dict[str, object]:
    doc = bpm.json("start", "order_fulfilment", "--var", 'items=["book"]', "--wait", "20", *extra)
    assert isinstance(doc, dict)
    return doc


def bpm_executable() -> list[str]:
    """The installed ``bpm`` console script; ``python -m bpm.cli.main`` if there is none."""
    beside = Path(sys.executable).parent / "bpm"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("bpm")
    return [found] if found else [sys.executable, "-m", "bpm.cli.main"]


def command(*args: str) -> Sequence[str]:
    return [*bpm_executable(), *args]
