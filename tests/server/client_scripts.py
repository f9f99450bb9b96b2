"""A third-party client driven through a script of calls, one scenario per run: the client
lives in a virtualenv of its own (``clients.py``), so its script runs as a subprocess."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.ops_processes import form_key_bpmn
from tests.server.processes import error_boundary_bpmn, message_bpmn


@dataclass(frozen=True)
class ScriptClient:
    python: Path
    folder: Path
    user: str
    bpmn: str


def prepare(
    server: Server,
    tmp_path_factory: pytest.TempPathFactory,
    python: Path,
    *,
    user: str,
    prefix: str,
    script: str,
) -> ScriptClient:
    """The script in a folder of its own beside the BPMN file it deploys, the processes its
    scenarios use deployed, and an operator credential named ``user``."""
    folder = tmp_path_factory.mktemp(user)
    (folder / "calls.py").write_text(script)
    bpmn = error_boundary_bpmn(f"{prefix}_ext", f"{prefix}-topic")
    name = f"{prefix}.bpmn"
    (folder / name).write_text(bpmn)
    engine = server.runtime.engine
    engine.deploy_bpmn(bpmn)
    engine.deploy_bpmn(message_bpmn(f"{prefix}_msg", f"{prefix}-paid"))
    engine.deploy_bpmn(form_key_bpmn(f"{prefix}_sign"))
    server.add(user, Role.OPERATOR)
    return ScriptClient(python, folder, user, name)


def run(server: Server, client: ScriptClient, scenario: str) -> None:
    """One scenario; it passes when the script exits 0 and its last line is ``ok``."""
    env = {
        "BASE": server.base,
        "USER_NAME": client.user,
        "PASSWORD": server.secrets[client.user],
        "BPMN": str(client.folder / client.bpmn),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    done = subprocess.run(
        [str(client.python), "calls.py", scenario],
        cwd=client.folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{server.log_text()[-2000:]}"
    assert done.stdout.strip().endswith("ok")
