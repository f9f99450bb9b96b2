"""DBOS as a peer: the same 10 no-op steps workflow on the same PostgreSQL, in its own
database and its own virtualenv. Optional and never run by the tests: DBOS is no dependency of
bpm, so it is installed from PyPI into a virtualenv under the user's cache directory (made
once, reused after), never into bpm's environment or the repository.

    python -m bench.peers.dbos [--instances 200] [--url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

from bench.engine_throughput import fresh_database

HERE = Path(__file__).resolve().parent
DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_suite_dbos"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bpm-bench" / "dbos-venv"


class PeerUnavailable(RuntimeError):
    """DBOS could not be installed or did not run: the suite leaves its row out."""


def python() -> Path:
    """The DBOS virtualenv's interpreter, made and filled on first use."""
    exe = CACHE / "bin" / "python"
    if not exe.exists():
        venv.create(CACHE, with_pip=True)
    probe = subprocess.run([exe, "-c", "import dbos"], capture_output=True)
    if probe.returncode != 0:
        install = subprocess.run(
            [exe, "-m", "pip", "install", "-q", "dbos"], capture_output=True, text=True
        )
        if install.returncode != 0:
            raise PeerUnavailable(f"pip could not install dbos: {install.stderr.strip()[-300:]}")
    return exe


def run(instances: int, url: str = DEFAULT_URL) -> dict[str, float]:
    """Instances/s and steps/s of DBOS's 10-step workflow in a fresh database at ``url``."""
    exe = python()
    fresh_database(url)
    done = subprocess.run(
        [exe, HERE / "workflow.py", url, str(instances)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise PeerUnavailable(f"the DBOS workflow failed: {done.stderr.strip()[-300:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    try:
        figures = run(args.instances, args.url)
    except PeerUnavailable as exc:
        sys.exit(f"DBOS peer: {exc}")
    print(
        f"DBOS, 10 no-op steps, one workflow at a time: {figures['instances_per_s']:.1f} "
        f"instances/s, {figures['steps_per_s']:.1f} steps/s"
    )


if __name__ == "__main__":
    main()
