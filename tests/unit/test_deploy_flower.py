"""deploy/ never runs Flower without a login or with an empty password, nor publishes it beyond
loopback: Flower can read every job's arguments and shut workers down.

Docker and systemd do not run here, so this reads their files; the guard each of them runs
before Flower (refuse to start while ``FLOWER_BASIC_AUTH`` is empty) is run here with ``sh``.
tests/workers/test_runtime.py starts a real Flower and shows the login is asked for.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
LOGIN = "FLOWER_BASIC_AUTH"
#: The guard every Flower start runs first (in a systemd unit ``$$`` stands for ``$``).
GUARD = re.compile(r'test -n "\$\{?FLOWER_BASIC_AUTH\}?" \|\|')
LOOPBACK = {"127.0.0.1", "::1", "[::1]", "localhost"}
#: A login given on the command line is visible to every local user (``ps``), and one written
#: into a deploy file is a committed secret: Flower reads it from its environment instead.
LOGIN_OPTION = re.compile(r"--basic[-_]auth")


def _compose_services() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services: dict[str, dict[str, Any]] = document["services"]
    return services


def _runs_flower(command: object) -> bool:
    words = command if isinstance(command, list) else [str(command)]
    return any(re.search(r"\bflower\b", str(word)) for word in words)


def _flower_services() -> dict[str, dict[str, Any]]:
    found = {n: s for n, s in _compose_services().items() if _runs_flower(s.get("command", ""))}
    assert found, "docker-compose.yml has no Flower service: this test reads the wrong file"
    return found


def _published_host(port: object) -> str:
    """The host address a compose port entry publishes on; every interface when none is
    named (``"5555:5555"``)."""
    if isinstance(port, dict):
        return str(port.get("host_ip", "0.0.0.0"))
    spec = str(port).split("/")[0]
    if spec.startswith("["):  # "[::1]:5555:5555"
        return spec[: spec.index("]") + 1]
    parts = spec.split(":")
    return parts[0] if len(parts) == 3 else "0.0.0.0"


def _compose_script() -> str:
    (service,) = _flower_services().values()
    command = service["command"]
    assert isinstance(command, list) and command[:2] == ["sh", "-c"], command
    # Compose turns $$ into $ before the shell sees it.
    return str(command[2]).replace("$$", "$")


def _procfile_script() -> str:
    lines = (DEPLOY / "Procfile").read_text().splitlines()
    (line,) = (line for line in lines if line.startswith("flower:"))
    return line.partition(":")[2].strip()


def _unit_lines(key: str) -> list[str]:
    text = (DEPLOY / "systemd" / "bpm-flower.service").read_text()
    return [line.partition("=")[2] for line in text.splitlines() if line.startswith(f"{key}=")]


def _systemd_guard() -> str:
    """The guard of the unit's ExecStartPre, as systemd hands it to sh ($$ is a literal $)."""
    (pre,) = _unit_lines("ExecStartPre")
    words = shlex.split(pre.replace("$$", "$"))
    assert words[:2] == ["/bin/sh", "-c"], words
    return words[2]


def _refuses(script: str, login: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != LOGIN}
    if login is not None:
        env[LOGIN] = login
    return subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_compose_publishes_flower_on_loopback_only() -> None:
    for name, service in _flower_services().items():
        assert service.get("network_mode") != "host", f"{name} shares the host's network"
        hosts = [_published_host(port) for port in service.get("ports", [])]
        assert hosts, f"{name} publishes no port: this test reads the wrong service"
        assert set(hosts) <= LOOPBACK, f"{name} is published on {hosts}"


def test_procfile_and_systemd_bind_flower_to_loopback() -> None:
    (start,) = _unit_lines("ExecStart")
    for command in (_procfile_script(), start):
        assert _runs_flower(command)
        assert "--address=127.0.0.1" in command, command


@pytest.mark.parametrize(
    ("where", "read"),
    [
        ("docker-compose.yml", _compose_script),
        ("Procfile", _procfile_script),
        ("systemd/bpm-flower.service", _systemd_guard),
    ],
)
def test_flower_does_not_start_without_a_login(where: str, read: Callable[[], str]) -> None:
    script = read()
    assert GUARD.search(script), f"{where}: Flower starts without checking {LOGIN}"
    if where != "systemd/bpm-flower.service":  # there the guard is its own ExecStartPre
        assert script.index("test -n") < script.index("flower"), where
    for login in (None, ""):
        refused = _refuses(script, login)
        assert refused.returncode == 1, f"{where} with {LOGIN}={login!r}: {refused}"
        assert LOGIN in refused.stderr


def _guard_only(script: str) -> str:
    """The script up to Flower's start, then a word that says the guard let it through."""
    start = script.find("exec celery")
    return (script if start < 0 else script[:start]).rstrip().rstrip(";") + "; echo PASSED"


@pytest.mark.parametrize(
    ("where", "read"),
    [
        ("docker-compose.yml", _compose_script),
        ("Procfile", _procfile_script),
        ("systemd/bpm-flower.service", _systemd_guard),
    ],
)
def test_flower_does_not_start_with_an_empty_password(where: str, read: Callable[[], str]) -> None:
    """Flower compares the login as given: ``ops:`` lets anyone in as ops with no password."""
    guard = _guard_only(read())
    for login in ("ops:", ":secret", "ops", "ops:secret,admin:", "ops:secret,,admin:x"):
        refused = _refuses(guard, login)
        assert refused.returncode == 1, f"{where} with {LOGIN}={login!r}: {refused}"
        assert "neither of them empty" in refused.stderr, where
    for login in ("ops:secret", "ops:a b*c,admin:x:y"):
        passed = _refuses(guard, login)
        assert passed.returncode == 0 and "PASSED" in passed.stdout, (where, login, passed)


def test_no_login_is_written_into_the_deploy_files() -> None:
    for path in sorted(p for p in DEPLOY.rglob("*") if p.is_file()):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.lstrip().startswith("#"):
                assert not LOGIN_OPTION.search(line), f"{path.name}:{number}: {line}"
    example = (DEPLOY / "bpm.env.example").read_text().splitlines()
    (setting,) = (line for line in example if line.startswith(f"{LOGIN}="))
    assert setting == f"{LOGIN}=", "bpm.env.example must leave the Flower login for the operator"
