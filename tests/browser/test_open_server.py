"""With no credential configured the API is open on loopback, and so is the cockpit: no
login, the visitor is the anonymous operator; its forms still need the CSRF token."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from tests.conftest import CLONE_PREFIX, create_database, drop_database
from tests.server.conftest import _free_port, start_server


@pytest.fixture(scope="module")
def open_cockpit(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    name = f"{CLONE_PREFIX}{os.getpid()}_{uuid4().hex[:8]}"
    url = create_database(name, template=pg_template)
    port = _free_port()
    log: Path = tmp_path_factory.mktemp("open") / "server.log"
    proc = start_server(url, log, port)
    try:
        yield f"http://127.0.0.1:{port}/cockpit"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        drop_database(name)


def test_an_open_server_needs_no_login_but_still_a_csrf_token(open_cockpit: str) -> None:
    with httpx.Client(base_url=open_cockpit, timeout=40) as client:
        page = client.get("/incidents")
        assert page.status_code == 200
        assert "anonymous" in page.text and 'id="bulk-retry"' in page.text
        refused = client.post("/incidents/bulk", data={"action": "retry"})
        assert refused.status_code == 403
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token
        confirm = client.post("/incidents/bulk", data={"action": "retry", "csrf": token.group(1)})
        assert confirm.status_code == 200 and 'data-count="0"' in confirm.text
