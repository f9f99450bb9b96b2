"""``bpm demo --serve``: the demo's database on a running server, with Python alone (SQLite,
no broker): the printed login opens the cockpit, which shows the failed order, the order
waiting for a clerk and the compensated saga; a clerk completes the review through the API."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.conftest import ENV_VARS, bpm_executable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    port, folder = _free_port(), tmp_path_factory.mktemp("demo-serve")
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    log = folder / "out.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*bpm_executable(), "demo", "--serve", "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder, start_new_session=True,
        )  # fmt: skip
    try:
        secret = _wait_for_login(log, proc)
        base = f"http://127.0.0.1:{port}"
        _wait_for(base)
        yield base, secret
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def _wait_for_login(log: Path, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(r"log in as demo with the secret (\S+)", log.read_text())
        if found:
            return found.group(1)
        assert proc.poll() is None, log.read_text()
        time.sleep(0.2)
    raise AssertionError(f"no login printed:\n{log.read_text()}")


def _wait_for(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/cockpit/login", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("the demo's server did not answer")


def test_the_cockpit_shows_what_the_demo_left(demo: tuple[str, str]) -> None:
    base, secret = demo
    with httpx.Client(base_url=base, timeout=20) as browser:
        page = browser.get("/cockpit/login")
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token, page.text
        form = {"name": "demo", "secret": secret, "csrf": token.group(1)}
        logged_in = browser.post("/cockpit/login", data=form, follow_redirects=True)
        assert logged_in.status_code == 200, logged_in.text
        instances = browser.get("/cockpit/instances").text
        for business_key in ("ORDER-3001", "ORDER-2001"):
            assert business_key in instances
        assert "FAILED" in instances and "TERMINATED" in instances
        assert "Review the order" in browser.get("/cockpit/tasks").text


def test_a_clerk_completes_the_waiting_review(demo: tuple[str, str]) -> None:
    base, secret = demo
    with httpx.Client(base_url=f"{base}/engine-rest", auth=("demo", secret), timeout=20) as api:
        (task,) = api.get("/task", params={"processInstanceBusinessKey": "ORDER-3001"}).json()
        refused = api.post(f"/task/{task['id']}/submit-form", json={"variables": {}})
        assert refused.status_code == 400 and "approved" in refused.json()["message"]
        body = {"variables": {"approved": {"value": True}}}
        assert api.post(f"/task/{task['id']}/submit-form", json=body).status_code == 204
        history = api.get(
            "/history/process-instance", params={"processInstanceBusinessKey": "ORDER-3001"}
        )
        assert history.json()[0]["state"] == "COMPLETED"
