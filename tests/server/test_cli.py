"""``bpm credentials`` and ``bpm serve``'s refusal to bind beyond loopback with none."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.server.conftest import ROOT


def _bpm(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BPM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "bpm.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_serve_refuses_a_public_address_without_credentials(pg_url: str) -> None:
    done = _bpm(pg_url, "serve", "--host", "0.0.0.0", "--port", "1")
    assert done.returncode == 1
    assert "no API credential is configured" in done.stderr and "loopback" in done.stderr


def test_credentials_add_list_remove(pg_url: str) -> None:
    added = _bpm(pg_url, "credentials", "add", "w1", "--role", "worker", "--topic", "a")
    assert added.returncode == 0, added.stderr
    secret = next(line.split()[-1] for line in added.stdout.splitlines() if "Basic secret" in line)
    assert f"w1.{secret}" in added.stdout
    listed = _bpm(pg_url, "credentials", "list")
    assert "w1" in listed.stdout and "worker" in listed.stdout and secret not in listed.stdout
    again = _bpm(pg_url, "credentials", "add", "w1", "--role", "viewer")
    assert again.returncode == 1 and "exists" in again.stderr
    wrong = _bpm(pg_url, "credentials", "add", "v1", "--role", "viewer", "--topic", "a")
    assert wrong.returncode == 1 and "--topic limits a worker" in wrong.stderr
    assert _bpm(pg_url, "credentials", "remove", "w1").returncode == 0
    assert "w1" not in _bpm(pg_url, "credentials", "list").stdout
