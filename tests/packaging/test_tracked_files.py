"""What git tracks: sources and docs only, never an install of someone else's code.

A client's ``npm install`` (367 files of ``node_modules``) and its log were once committed at
the top level by a test run whose cache pointed into the checkout.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Path parts that only an install, a cache or a run leaves behind.
FORBIDDEN_PARTS = frozenset({"node_modules", ".venv", "__pycache__", ".pytest_cache"})
FORBIDDEN_PREFIXES = ("celerybeat-schedule", "js-client-", "py-client-")


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.splitlines()


def test_no_installed_packages_or_run_leftovers_are_tracked() -> None:
    bad = [
        path
        for path in _tracked()
        if FORBIDDEN_PARTS.intersection(Path(path).parts)
        or Path(path).parts[0].startswith(FORBIDDEN_PREFIXES)
        or path.endswith(".log")
    ]
    assert bad == [], f"installed or generated files are tracked: {bad[:10]}"
