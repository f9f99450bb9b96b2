"""The README's and the tutorial's commands, as a newcomer runs them.

The README's HTTP block runs as it is written (a free port, loopback, two server processes
instead of four), against a real ``bpm serve`` on PostgreSQL; the rest is checked against the
files, topics and revisions that exist.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from bpm.store import Database, instances
from tests.cli.conftest import bpm_executable
from tests.server.conftest import ROOT, _free_port

README = (ROOT / "README.md").read_text()
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text()
#: Variables a shell has without being told.
GIVEN = {"HOME", "PATH", "USER", "PWD"}


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def shipped_topics() -> set[str]:
    topics: set[str] = set()
    for path in [*ROOT.glob("bpm/demo/*"), *ROOT.glob("examples/*")]:
        if path.suffix == ".json":
            topics |= set(re.findall(r'"topic":\s*"([^"]+)"', path.read_text()))
        elif path.suffix == ".bpmn":
            topics |= set(re.findall(r'camunda:topic="([^"]+)"', path.read_text()))
    return topics


@pytest.mark.parametrize("doc", ["README.md", "docs/tutorial.md"])
def test_every_deployed_file_exists(doc: str) -> None:
    text = "\n".join(sh_blocks((ROOT / doc).read_text()))
    paths = re.findall(r"bpm deploy (?:--check )?([\w./-]+\.\w+)", text)
    assert paths
    assert [p for p in paths if not (ROOT / p).is_file()] == []


def test_every_topic_named_is_one_a_shipped_process_uses() -> None:
    named = set(re.findall(r"--topic ([\w.-]+)", "\n".join(sh_blocks(README))))
    assert named and named <= shipped_topics(), (named, shipped_topics())


@pytest.mark.parametrize("doc", ["README.md", "docs/tutorial.md"])
def test_every_shell_variable_used_is_set_first(doc: str) -> None:
    text = "\n".join(sh_blocks((ROOT / doc).read_text()))
    used = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", text))
    env_file = (ROOT / "examples" / "approval.env").read_text()
    assigned = set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", text + env_file))
    assert used - assigned - GIVEN == set()


def test_the_tutorial_shows_the_revision_an_upgrade_reaches(empty_pg_url: str) -> None:
    env = {**os.environ, "BPM_DATABASE_URL": empty_pg_url}
    done = subprocess.run(
        [*bpm_executable(), "db", "upgrade"], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    shown = re.search(r"to revision (\d+) \(head (\d+)\)", TUTORIAL)
    reached = re.search(r"to revision (\d+) \(head (\d+)\)", done.stdout)
    assert shown and reached and shown.groups() == reached.groups(), done.stdout


def test_the_tutorial_starts_flower_and_waits_for_a_line_the_worker_prints() -> None:
    assert "celery -A bpm_workers flower" in TUTORIAL
    assert "worker ready: recovery scans requested" in TUTORIAL
    worker = re.search(r"celery -A bpm_workers worker[^\n]*", TUTORIAL)
    assert worker and " -l " not in worker.group(0)  # the line shows at the default level


def http_block() -> str:
    """The README's block that serves the HTTP API, made to run here."""
    (block,) = [b for b in sh_blocks(README) if "bpm serve" in b]
    assert "$SHOP_SECRET" in block
    lines = [line for line in block.splitlines() if not line.startswith("pip install")]
    return "\n".join(lines) + "\n"


def test_the_readme_http_start_completes_an_order(pg_url: str, tmp_path: Path) -> None:
    """Credentials, ``bpm serve --workers``, the wait, the curl start: the instance the
    README starts completes (with no broker the server runs its steps itself)."""
    db = Database(pg_url)
    try:
        bin_dir = Path(bpm_executable()[0]).parent
        deployed = subprocess.run(
            [*bpm_executable(), "deploy", "bpm/demo/order_fulfilment.json"],
            env={**os.environ, "BPM_DATABASE_URL": pg_url},
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert deployed.returncode == 0, deployed.stderr
        port = _free_port()
        script = (
            http_block()
            .replace("8080", str(port))
            .replace("--workers 4", "--workers 2")
            .replace("--host 0.0.0.0", "--host 127.0.0.1")
        )
        env = {
            **os.environ,
            "BPM_DATABASE_URL": pg_url,
            "BPM_IMPORTS": "bpm.demo.order_handlers",
            "PYTHONPATH": str(ROOT),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        env.pop("BPM_BROKER_URL", None)
        log = tmp_path / "readme.log"
        with log.open("wb") as out:
            shell = subprocess.Popen(
                ["bash", "-e", "-c", script],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        try:
            assert shell.wait(timeout=120) == 0, log.read_text()
            # The server shares the log: with two server processes the second one's startup
            # line may follow the answer on its line, which curl does not end.
            text = log.read_text()
            started, _ = json.JSONDecoder().raw_decode(text, text.rindex('{"links"'))
            assert started["businessKey"] == "order-43"
            deadline = time.monotonic() + 30
            while True:
                with db.transaction() as conn:
                    (row,) = instances.search(conn, business_key="order-43")
                if row.state != "RUNNING" or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert row.state == "COMPLETED", log.read_text()
        finally:
            try:  # the server the block left running
                os.killpg(shell.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            time.sleep(1)
    finally:
        db.dispose()
