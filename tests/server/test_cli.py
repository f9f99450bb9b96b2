"""``bpm credentials`` and ``bpm serve``'s refusal to bind beyond loopback with none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.server.conftest import ROOT, _free_port


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


def test_serve_with_several_workers_logs_every_request(pg_url: str, tmp_path: Path) -> None:
    """``bpm serve --workers N`` (the README's command): each worker process logs its
    requests, as a single-process server does."""
    port, log = _free_port(), tmp_path / "serve.log"
    env = {**os.environ, "BPM_DATABASE_URL": pg_url, "PYTHONPATH": str(ROOT)}
    env.pop("BPM_BROKER_URL", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bpm.cli", "serve", "--port", str(port), "--workers", "2"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}/engine-rest"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/version", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        paths = [f"/engine-rest/process-definition/count?i={i}" for i in range(20)]
        for path in paths:  # a fresh connection each: the workers share the accepts
            assert httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).status_code < 500
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    lines = log.read_text(errors="replace").splitlines()
    for path in paths:
        served = [line for line in lines if f"{path} HTTP" in line]
        assert len(served) == 1, (path, lines[-30:])
        assert f"bpm-server[{proc.pid}]" not in served[0]  # a worker's line, not the parent's
