"""Browsers and networks: a web page cannot deploy or start through a developer's browser
(foreign ``Host`` or ``Origin`` on an open server, stored Basic credentials sent by a foreign
page), every answer is ``nosniff`` and deployment files are sandboxed, ``bpm serve`` serves
HTTPS itself and believes forwarded headers only from the proxies it is told, and the OpenAPI
document can be turned off. Each server here is a real ``bpm serve``."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.states import Role
from bpm.store import Database
from tests.conftest import CLONE_PREFIX, create_database, drop_database
from tests.server.conftest import CREDENTIAL_TTL, ROOT, Server, _free_port
from tests.server.processes import message_bpmn
from tests.server.test_deployments import MODELER_HEADERS, modeler_body

EVIL = "http://evil.example"


@dataclass
class Served:
    base: str
    log: Path
    proc: subprocess.Popen[bytes]
    secret: str = ""

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _bpm_env(url: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
    env = {
        **os.environ,
        "BPM_DATABASE_URL": url,
        "PYTHONPATH": str(ROOT),
        "BPM_SERVER_CREDENTIAL_TTL": CREDENTIAL_TTL,
        **extra,
    }
    env.pop("BPM_BROKER_URL", None)
    return env


def _serve(
    url: str,
    log: Path,
    *args: str,
    env: Mapping[str, str] = {},
    scheme: str = "http",
    verify: ssl.SSLContext | bool = True,
) -> Served:
    """``bpm serve`` on a free port, once it answers anything over ``scheme``."""
    port = _free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bpm.cli", "serve", "--port", str(port), *args],
            env=_bpm_env(url, env),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    base = f"{scheme}://127.0.0.1:{port}/engine-rest"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"bpm serve exited: {log.read_text(errors='replace')}")
        try:
            httpx.get(f"{base}/engine", timeout=1, verify=verify)
            return Served(base, log, proc)
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"bpm serve did not answer: {log.read_text(errors='replace')}")


def _stop(served: Served) -> None:
    served.proc.terminate()
    try:
        served.proc.wait(10)
    except subprocess.TimeoutExpired:
        served.proc.kill()


@contextmanager
def _fresh_database(template: str) -> Iterator[str]:
    name = f"{CLONE_PREFIX}{os.getpid()}_{uuid4().hex[:8]}"
    url = create_database(name, template=template)
    try:
        yield url
    finally:
        drop_database(name)


@pytest.fixture(scope="module")
def database(pg_template: str) -> Iterator[str]:
    """A database with no credential: servers on it are open."""
    with _fresh_database(pg_template) as url:
        yield url


@pytest.fixture(scope="module")
def open_server(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = _serve(database, tmp_path_factory.mktemp("open") / "server.log")
    try:
        yield served
    finally:
        _stop(served)


def _deploy(base: str, key: str, headers: Mapping[str, str], **kw: object) -> httpx.Response:
    body = modeler_body(key, f"{key}.bpmn", message_bpmn(key))
    with httpx.Client(base_url=base, timeout=40, **kw) as c:  # type: ignore[arg-type]
        return c.post("/deployment/create", content=body, headers={**MODELER_HEADERS, **headers})


def _deployed(base: str, key: str, **kw: object) -> int:
    with httpx.Client(base_url=base, timeout=40, **kw) as c:  # type: ignore[arg-type]
        got = c.get("/process-definition/count", params={"key": key})
        assert got.status_code == 200, got.text
        count: int = got.json()["count"]
        return count


# -- an open server (no credential, loopback) -------------------------------------------------


def test_an_open_server_refuses_a_page_of_a_foreign_host(open_server: Served) -> None:
    """DNS rebinding: evil.example resolves to 127.0.0.1, the browser sends its own name."""
    got = _deploy(open_server.base, "rebound", {"Host": "evil.example", "Origin": EVIL})
    assert got.status_code == 403, got.text
    assert got.json()["type"] == "AuthorizationException"
    assert "Host: 'evil.example' is not a loopback name" in got.json()["message"]
    assert got.headers["x-content-type-options"] == "nosniff"
    alone = _deploy(open_server.base, "rebound", {"Host": "evil.example:8080"})
    assert alone.status_code == 403, alone.text
    assert _deployed(open_server.base, "rebound") == 0
    assert "refused POST /engine-rest/deployment/create from 127.0.0.1" in open_server.log_text()


@pytest.mark.parametrize("origin", [EVIL, "https://localhost.evil.example", "null"])
def test_an_open_server_refuses_a_page_of_a_foreign_origin(
    open_server: Served, origin: str
) -> None:
    got = _deploy(open_server.base, "forged", {"Origin": origin})
    assert got.status_code == 403, got.text
    assert f"Origin: {origin!r} is a foreign web page" in got.json()["message"]
    assert _deployed(open_server.base, "forged") == 0


@pytest.mark.parametrize(
    ("key", "headers"),
    [
        ("plain", {}),
        ("named", {"Host": "localhost"}),
        ("v6", {"Host": "[::1]:8080"}),
        ("devpage", {"Origin": "http://localhost:3000"}),
        ("modeler", {"Origin": "file://"}),  # Camunda Modeler's Deploy button
    ],
)
def test_an_open_server_serves_loopback_names_and_local_pages(
    open_server: Served, key: str, headers: dict[str, str]
) -> None:
    got = _deploy(open_server.base, key, headers)
    assert got.status_code == 200, got.text
    assert got.headers["x-content-type-options"] == "nosniff"
    assert _deployed(open_server.base, key) == 1


# -- a server with credentials (tests/server/conftest.py) -------------------------------------


def test_stored_basic_credentials_sent_by_a_foreign_page_are_refused(server: Server) -> None:
    with server.client("operator") as c:
        got = c.post(
            "/deployment/create",
            content=modeler_body("csrf", "csrf.bpmn", message_bpmn("csrf")),
            headers={**MODELER_HEADERS, "Origin": EVIL},
        )
        assert got.status_code == 403, got.text
        assert "Basic credentials it stored" in got.json()["message"]
        assert c.get("/process-definition/count", params={"key": "csrf"}).json()["count"] == 0


def test_callers_that_are_not_foreign_pages_pass_with_credentials(server: Server) -> None:
    operator = server.auth("operator")
    token = f"Bearer operator.{server.secrets['operator']}"
    # Camunda Modeler (Origin file://, or none); a page of the server's own site behind a
    # proxy; a bearer token, which no browser sends by itself; a proxy's Host.
    for key, headers, auth in [
        ("m_file", {"Origin": "file://"}, operator),
        ("m_none", {}, operator),
        ("same", {"Host": "bpm.example.com", "Origin": "https://bpm.example.com"}, operator),
        ("bearer", {"Origin": EVIL, "Authorization": token}, None),
        ("proxied", {"Host": "bpm.example.com"}, operator),
    ]:
        got = _deploy(server.base, key, headers, auth=auth)
        assert got.status_code == 200, (key, got.text)
        assert _deployed(server.base, key, auth=operator) == 1, key


def test_deployment_files_are_sandboxed_and_nothing_is_sniffed(server: Server) -> None:
    page = b"<html><script>fetch('/engine-rest/deployment/create')</script></html>"
    with server.client("operator") as c:
        files = [
            ("p", ("page.bpmn", message_bpmn("sandboxed").encode(), "text/xml")),
            ("h", ("page.html", page, "text/html")),
        ]
        made = c.post("/deployment/create", data={"deployment-name": "x"}, files=files).json()
        resources = {
            r["name"]: r["id"] for r in c.get(f"/deployment/{made['id']}/resources").json()
        }
        data = c.get(f"/deployment/{made['id']}/resources/{resources['page.html']}/data")
        assert data.status_code == 200 and data.content == page
        assert data.headers["content-security-policy"] == "sandbox"
        assert data.headers["x-content-type-options"] == "nosniff"
        for answer in (c.get("/engine"), c.get(f"/deployment/{uuid4()}"), c.get("/nowhere")):
            assert answer.headers["x-content-type-options"] == "nosniff", answer.url


def test_forwarded_headers_are_ignored_unless_the_proxy_is_named(server: Server) -> None:
    with server.client() as c:  # no credential: refused, and logged with the caller's address
        assert c.get("/engine", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 401
    time.sleep(0.2)
    log = server.log_text()
    assert "refused GET /engine-rest/engine from 127.0.0.1" in log
    assert "203.0.113.9" not in log
    with server.client() as c:
        assert c.get("/openapi.json").status_code == 200  # served by default


# -- HTTPS, a named proxy, allowed origins, no OpenAPI document -------------------------------


@pytest.fixture(scope="module")
def tls(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with a credential, a self-signed certificate, a proxy on 127.0.0.1, two
    allowed origins and no OpenAPI document, on a database of its own."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    openssl = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
    subprocess.run(
        [*openssl, "-keyout", str(key), "-out", str(cert), *subject],
        check=True,
        capture_output=True,
        timeout=60,
    )
    with _fresh_database(pg_template) as url:
        db = Database(url)
        try:
            secret = credentials.add(db, "tls-operator", Role.OPERATOR, SYSTEM_CLOCK.now())
        finally:
            db.dispose()
        served = _serve(
            url,
            folder / "server.log",
            "--forwarded-allow-ips",
            "127.0.0.1",
            env={
                "BPM_SERVER_CERTFILE": str(cert),
                "BPM_SERVER_KEYFILE": str(key),
                "BPM_SERVER_ALLOWED_ORIGINS": "https://tasks.example.com, http://other.example:81",
                "BPM_SERVER_OPENAPI": "0",
            },
            scheme="https",
            verify=ssl.create_default_context(cafile=str(cert)),
        )
        served.secret = secret
        try:
            yield served
        finally:
            _stop(served)


def _tls_client(tls: Served, **kw: object) -> httpx.Client:
    cert = tls.log.parent / "cert.pem"
    return httpx.Client(
        base_url=tls.base,
        auth=("tls-operator", tls.secret),
        verify=ssl.create_default_context(cafile=str(cert)),
        timeout=40,
        **kw,  # type: ignore[arg-type]
    )


def test_bpm_serve_serves_https_itself(tls: Served) -> None:
    with _tls_client(tls) as c:
        assert c.get("/engine").json() == [{"name": "default"}]
    with pytest.raises(httpx.TransportError):  # no plain HTTP on that port
        httpx.get(tls.base.replace("https://", "http://") + "/engine", timeout=5)


def test_the_openapi_document_can_be_turned_off(tls: Served) -> None:
    with _tls_client(tls) as c:
        assert c.get("/openapi.json").status_code == 404
        assert c.get("/docs").status_code == 404


def test_allowed_origins_may_use_stored_credentials(tls: Served) -> None:
    with _tls_client(tls) as c:
        for origin, status in [
            ("https://tasks.example.com", 200),
            ("HTTPS://TASKS.EXAMPLE.COM", 200),
            ("http://other.example:81", 200),
            ("http://other.example", 403),
            ("https://tasks.example.com.evil.example", 403),
        ]:
            got = c.get("/engine", headers={"Origin": origin})
            assert got.status_code == status, (origin, got.text)


def test_a_named_proxy_gives_the_client_address_to_the_logs(tls: Served) -> None:
    with _tls_client(tls) as c:
        c.get("/engine", headers={"X-Forwarded-For": "203.0.113.7"})
        c.get("/engine", headers={"X-Forwarded-For": "198.51.100.4", "Origin": EVIL})
    time.sleep(0.2)
    log = tls.log_text()
    (line,) = (line for line in log.splitlines() if "203.0.113.7" in line)
    assert '"GET /engine-rest/engine HTTP/1.1" 200' in line, line
    assert "refused GET /engine-rest/engine from 198.51.100.4" in log


# -- bpm serve's refusals before it binds -----------------------------------------------------


def _bpm_serve(url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpm.cli", "serve", "--port", "1", *args],
        env=_bpm_env(url, env),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_serve_refuses_half_a_tls_setting_a_proxy_when_open_and_a_bad_origin(
    database: str, tmp_path: Path
) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("not read: refused before")
    half = _bpm_serve(database, "--certfile", str(cert))
    assert half.returncode == 1 and "--certfile and --keyfile go together" in half.stderr
    proxy = _bpm_serve(database, "--forwarded-allow-ips", "10.0.0.1")
    assert proxy.returncode == 1 and "takes no --forwarded-allow-ips" in proxy.stderr
    bad = _bpm_serve(database, BPM_SERVER_ALLOWED_ORIGINS="https://ok.example,tasks.example/")
    assert bad.returncode == 1
    assert "BPM_SERVER_ALLOWED_ORIGINS: 'tasks.example/' is not an origin" in bad.stderr
