"""The official Camunda external-task clients, installed from their registries once into a
cache outside the repository (``~/.cache/bpm-tests``, or ``BPM_TEST_CACHE``)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

JS_CLIENT = "camunda-external-task-client-js@3.1.0"
PY_CLIENT = "camunda-external-task-client-python3==4.5.0"
PYCAMUNDA = "pycamunda==0.6.1"
GENERIC_CLIENT = "generic-camunda-client==7.18.0"


def cache_dir() -> Path:
    root = Path(os.environ.get("BPM_TEST_CACHE", Path.home() / ".cache" / "bpm-tests"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot install {what}: {exc}")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        text = " | ".join(tail)
        if any(
            w in text
            for w in (
                "ENOTFOUND",
                "ETIMEDOUT",
                "EAI_AGAIN",
                "ECONNREFUSED",
                "connection",
                "Connection",
                "No matching distribution",
            )
        ):
            pytest.skip(f"the registry is unreachable, {what} cannot be installed: {text}")
        raise RuntimeError(f"installing {what} failed: {text}")


def js_client() -> Path:
    """A folder whose node_modules holds the JS client (Node >= 20 needed)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed")
    folder = cache_dir() / "js-client-3.1.0"
    if not (folder / "node_modules" / "camunda-external-task-client-js").is_dir():
        folder.mkdir(exist_ok=True)
        if not (folder / "package.json").exists():
            (folder / "package.json").write_text('{"name": "bpm-js-worker", "private": true}\n')
        _run(["npm", "install", "--no-audit", "--no-fund", JS_CLIENT], folder, JS_CLIENT)
    return folder


def py_client() -> Path:
    """The python of a small virtualenv with the Python client (and pydantic, which it
    imports without declaring it)."""
    return _venv("py-client-4.5.0", PY_CLIENT, "pydantic")


def pycamunda_client() -> Path:
    """The python of a small virtualenv with pycamunda."""
    return _venv("pycamunda-0.6.1", PYCAMUNDA)


def generic_client() -> Path:
    """The python of a small virtualenv with the OpenAPI-generated ``generic_camunda_client``."""
    return _venv("generic-camunda-client-7.18.0", GENERIC_CLIENT)


def _venv(name: str, *packages: str) -> Path:
    """A virtualenv in the cache holding ``packages``, made once. One not marked ready was
    left half made (a run stopped while it was made, say): it is made again from scratch."""
    folder = cache_dir() / name
    python = folder / "bin" / "python"
    ready = folder / ".installed"
    # Test processes running side by side (pytest-xdist) take turns: one makes it, the
    # others then find it ready.
    with (cache_dir() / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            made = [sys.executable, "-m", "venv", "--clear", str(folder)]
            _run(made, cache_dir(), "a virtualenv")
            _run([str(python), "-m", "pip", "install", "-q", *packages], folder, packages[0])
            ready.touch()
    return python
