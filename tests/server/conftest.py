"""A real ``bpm serve`` process (uvicorn on a free port) on its own PostgreSQL database per
test module, with an embedded engine in the test process to deploy, start and inspect."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.embedded import EmbeddedRuntime
from bpm.states import Role
from bpm.store import Database
from tests.conftest import CLONE_PREFIX, create_database, drop_database

ROOT = Path(__file__).resolve().parents[2]
#: Short, so a removed credential stops working quickly in the tests that check it.
CREDENTIAL_TTL = "1"


@dataclass
class Server:
    base: str
    url: str
    log: Path
    db: Database
    runtime: EmbeddedRuntime
    secrets: dict[str, str] = field(default_factory=dict)

    def auth(self, name: str) -> tuple[str, str]:
        return name, self.secrets[name]

    def client(self, name: str | None = None, **kw: object) -> httpx.Client:
        auth = self.auth(name) if name else None
        return httpx.Client(base_url=self.base, auth=auth, timeout=40, **kw)  # type: ignore[arg-type]

    def add(
        self,
        name: str,
        role: Role,
        topics: tuple[str, ...] = (),
        processes: tuple[str, ...] = (),
    ) -> str:
        secret = credentials.add(self.db, name, role, SYSTEM_CLOCK.now(), topics, processes)
        self.secrets[name] = secret
        return secret

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(url: str, log: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "BPM_DATABASE_URL": url,
        "PYTHONPATH": str(ROOT),
        "BPM_SERVER_CREDENTIAL_TTL": CREDENTIAL_TTL,
    }
    env.pop("BPM_BROKER_URL", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bpm.cli", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"bpm serve exited: {log.read_text(errors='replace')}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/engine-rest/openapi.json", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"bpm serve did not answer: {log.read_text(errors='replace')}")


@pytest.fixture(scope="module")
def server(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    name = f"{CLONE_PREFIX}{os.getpid()}_{uuid4().hex[:8]}"
    url = create_database(name, template=pg_template)
    db = Database(url)
    runtime = EmbeddedRuntime(url, migrate=False)
    log = tmp_path_factory.mktemp("server") / "server.log"
    port = _free_port()
    srv = Server(f"http://127.0.0.1:{port}/engine-rest", url, log, db, runtime)
    srv.add("operator", Role.OPERATOR)  # a credential exists: the server is not open
    proc = start_server(url, log, port)
    try:
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        runtime.close()
        db.dispose()
        drop_database(name)
