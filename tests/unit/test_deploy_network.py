"""deploy/ publishes nothing beyond the host unless told to, and its Redis asks for a password:
whoever can write to the broker can start any process and shut every worker down.

Docker does not run here, so this reads docker-compose.yml and runs what its Redis service
runs with ``sh``: the refusal without a password, and (where ``redis-server`` is installed) a
real Redis from the service's own command, on a free port, that refuses a client without the
password, answers the healthcheck with it, and never shows it on its command line.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PASSWORD = "REDIS_PASSWORD"
LOOPBACK = {"127.0.0.1", "::1", "[::1]", "localhost"}
#: Compose's ``${NAME:-default}``: the value when NAME is not set.
DEFAULTED = re.compile(r"\$\{[A-Z_]+:-([^}]*)\}")


def _services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = yaml.safe_load(
        (DEPLOY / "docker-compose.yml").read_text()
    )["services"]
    return services


def _published_hosts(service: dict[str, Any]) -> list[str]:
    """The host address each port entry publishes on, with compose's defaults filled in;
    every interface when none is named (``"8080:8080"``)."""
    hosts = []
    for port in service.get("ports", []):
        spec = DEFAULTED.sub(r"\1", str(port)).split("/")[0]
        if spec.startswith("["):
            hosts.append(spec[: spec.index("]") + 1])
        else:
            parts = spec.split(":")
            hosts.append(parts[0] if len(parts) == 3 else "0.0.0.0")
    return hosts


def _redis_script() -> str:
    command = _services()["redis"]["command"]
    assert isinstance(command, list) and command[:2] == ["sh", "-c"], command
    return str(command[2]).replace("$$", "$")  # compose turns $$ into $


def _healthcheck() -> str:
    test = _services()["redis"]["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL", test
    return str(test[1]).replace("$$", "$")


def _env(password: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (PASSWORD, "REDISCLI_AUTH")}
    if password is not None:
        env[PASSWORD] = password
    return env


def _example() -> dict[str, str]:
    lines = (DEPLOY / "bpm.env.example").read_text().splitlines()
    pairs = (line.partition("=") for line in lines if line and not line.startswith("#"))
    return {name: value for name, _, value in pairs}


def test_compose_publishes_the_api_on_loopback_unless_told() -> None:
    server = _services()["server"]
    assert set(_published_hosts(server)) <= LOOPBACK, server["ports"]
    (entry,) = server["ports"]
    assert "${BPM_PUBLISH_ADDRESS:-127.0.0.1}" in entry  # the operator's override


def test_compose_publishes_no_redis_or_postgres_port() -> None:
    for name in ("redis", "postgres"):
        service = _services()[name]
        assert not service.get("ports") and service.get("network_mode") != "host", name


def test_the_example_environment_gives_redis_a_password_to_fill_in() -> None:
    example = _example()
    assert example[PASSWORD] == "", "the operator chooses the password"
    assert example["BPM_BROKER_URL"].startswith("redis://:REDIS_PASSWORD@")
    assert example["BPM_SERVER_HOST"] == "127.0.0.1"
    assert "env_file" in _services()["redis"], "Redis reads REDIS_PASSWORD from bpm.env"


@pytest.mark.parametrize("password", [None, ""])
def test_redis_does_not_start_without_a_password(password: str | None) -> None:
    script = _redis_script()
    assert script.index("test -n") < script.index("redis-server")
    refused = subprocess.run(
        ["sh", "-c", script], env=_env(password), capture_output=True, text=True, timeout=30
    )
    assert refused.returncode == 1, refused
    assert f"{PASSWORD} is not set: Redis does not start without a password" in refused.stderr


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """The compose service's Redis on a free port and in a temporary directory: (port, pid)."""
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    script = _redis_script()
    here = f"redis-server - --port {port} --bind 127.0.0.1 --dir {tmp_path}"
    assert script.count("redis-server - ") == 1, script
    proc = subprocess.Popen(
        ["sh", "-c", script.replace("redis-server - ", here + " ")],
        env=_env("9f1c0ffee"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "redis-server exited"
                time.sleep(0.05)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


def _cli(port: int, password: str | None) -> str:
    env = _env(None)
    if password is not None:
        env["REDISCLI_AUTH"] = password
    done = subprocess.run(
        ["redis-cli", "-p", str(port), "ping"], env=env, capture_output=True, text=True, timeout=10
    )
    return done.stdout + done.stderr


def test_the_compose_redis_asks_for_its_password(redis: tuple[int, int]) -> None:
    port, pid = redis
    assert "NOAUTH" in _cli(port, None)
    assert "WRONGPASS" in _cli(port, "guessed")
    assert _cli(port, "9f1c0ffee").strip() == "PONG"
    # the password reached Redis on its standard input, not its command line (ps shows that)
    assert b"9f1c0ffee" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    healthcheck = _healthcheck().replace("redis-cli ping", f"redis-cli -p {port} ping")
    healthy = subprocess.run(["sh", "-c", healthcheck], env=_env("9f1c0ffee"), timeout=10)
    assert healthy.returncode == 0
    sick = subprocess.run(["sh", "-c", healthcheck], env=_env("guessed"), timeout=10)
    assert sick.returncode != 0
