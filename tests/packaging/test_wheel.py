"""A built wheel, installed into a new virtualenv next to the Camunda external task client.

That client installs a top-level ``examples`` package. bpm's wheel must install only names of
its own (``bpm``, ``bpm_server``, ``bpm_cockpit``, ``bpm_workers``, ``bpm_beat``), or
whichever distribution is installed last replaces the other's modules and every ``bpm``
command fails to import. Slow
(a build, a virtualenv, an install from the package index; pip's cache makes a second run
cheap), and skipped when the package index cannot be reached.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
import redis

from tests.helpers.redis_db import redis_url

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: What pyproject.toml builds the wheel from (packages, package-dir targets, the readme).
SOURCES = (
    "pyproject.toml",
    "README.md",
    "bpm",
    "bpm_server",
    "bpm_cockpit",
    "bpm_workers",
    "bpm_beat",
    "bpm_metrics",
    "migrations",
)
#: A 4.x release of the client that installs a top-level ``examples``.
CAMUNDA = "camunda-external-task-client-python3==4.5.0"
OWN_NAMES = {"bpm", "bpm_server", "bpm_cockpit", "bpm_workers", "bpm_beat", "bpm_metrics"}
GENERIC_NAMES = {"examples", "workers", "beat", "tests", "bench"}
REDIS_URL = redis_url()
PIP_TIMEOUT = 600


def _run(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources: a build in the checkout would leave a
    ``build/`` folder whose stale files the next build puts into the wheel."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    out = base / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        cwd=base,
        timeout=PIP_TIMEOUT,
    )
    (built,) = out.glob("bpm-*.whl")
    return built


def _clean_env(home: Path) -> dict[str, str]:
    """An environment that knows nothing of this checkout or of the test's own settings."""
    keep = {"PATH", "LANG", "LC_ALL", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    return {**env, "HOME": str(home), "TMPDIR": str(home)}


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv holding the wheel (with its celery extra), then the Camunda client."""
    base = tmp_path_factory.mktemp("venv")
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(base), CAMUNDA],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"the package index is not reachable (pip download {CAMUNDA}): {probe.stderr}")
    target = base / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(target)], cwd=base)
    # bpm first, the client after it, as a worker author adds it: with a generic top-level
    # name in bpm's wheel, the client's files would replace bpm's.
    pip = [sys.executable, "-m", "pip", "--python", str(target / "bin" / "python"), "install"]
    _run([*pip, "-q", f"bpm[celery] @ {wheel.as_uri()}"], cwd=base, timeout=PIP_TIMEOUT)
    _run([*pip, "-q", CAMUNDA], cwd=base, timeout=PIP_TIMEOUT)
    return target


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The working directory of the installed commands: not the checkout, so nothing of it
    is importable."""
    return tmp_path


def test_the_wheel_installs_only_names_of_its_own(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (top_level,) = (n for n in names if n.endswith(".dist-info/top_level.txt"))
        declared = set(archive.read(top_level).decode().split())
    installed = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert installed == OWN_NAMES, f"the wheel installs {sorted(installed)}"
    assert declared == OWN_NAMES, f"top_level.txt says {sorted(declared)}"
    assert not (installed | declared) & GENERIC_NAMES


def test_the_demo_files_are_in_the_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for file in ("order_fulfilment.json", "order_saga.json", "order_saga.bpmn"):
        assert f"bpm/demo/{file}" in names


def test_the_cockpit_pages_are_in_the_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for file in ("templates/base.html", "templates/instance.html", "static/cockpit.js"):
        assert f"bpm_cockpit/{file}" in names


def test_the_camunda_client_keeps_its_examples_package(venv: Path, home: Path) -> None:
    """The collision is real in this virtualenv: ``examples`` is the client's."""
    where = _run(
        [str(venv / "bin" / "python"), "-c", "import camunda, examples; print(examples.__file__)"],
        cwd=home,
        env=_clean_env(home),
    )
    assert Path(where.strip()).is_relative_to(venv)


def test_bpm_commands_run_next_to_the_camunda_client(venv: Path, home: Path) -> None:
    env = _clean_env(home)
    assert "deploy" in _run([str(venv / "bin" / "bpm"), "--help"], cwd=home, env=env)
    out = _run([str(venv / "bin" / "bpm"), "demo"], cwd=home, env=env)
    assert out.count("COMPLETED") >= 4
    assert "ORDER-2001 is TERMINATED" in out


@pytest.fixture
def queue_prefix() -> Iterator[str]:
    """A queue prefix of this test alone; its queues and bindings are deleted afterwards."""
    prefix = f"pkg{uuid4().hex[:8]}."
    yield prefix
    client = redis.Redis.from_url(REDIS_URL)
    keys = client.keys(f"*{prefix}*")
    if keys:
        client.delete(*keys)


def test_a_celery_worker_starts_from_the_wheel(venv: Path, home: Path, queue_prefix: str) -> None:
    """``celery -A bpm_workers.app worker`` as deploy/ starts it: it imports the demo's
    handlers, reaches ready and runs its recovery scans (on SQLite, no server needed)."""
    env = {
        **_clean_env(home),
        "BPM_DATABASE_URL": f"sqlite:///{home / 'worker.db'}",
        "BPM_BROKER_URL": REDIS_URL,
        "BPM_QUEUE_PREFIX": queue_prefix,
        "BPM_IMPORTS": "bpm.demo.order_handlers",
        # A scan that finds nothing logs its job line at DEBUG only; this test waits for it.
        "BPM_JOB_LOG_LEVEL": "DEBUG",
    }
    _run([str(venv / "bin" / "bpm"), "db", "upgrade"], cwd=home, env=env)
    log = home / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [
                str(venv / "bin" / "celery"),
                "-A",
                "bpm_workers.app",
                "worker",
                "-P",
                "solo",
                "-n",
                f"{queue_prefix}@pkg",
                "-l",
                "info",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while b"bpm.scan_stalled" not in log.read_bytes() or b"succeeded" not in log.read_bytes():
            assert worker.poll() is None, f"the worker exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"no scan ran:\n{log.read_text()}"
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)
    text = log.read_text()
    assert "ready." in text and "Traceback" not in text, text
