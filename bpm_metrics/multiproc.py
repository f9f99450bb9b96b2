"""Prometheus multiprocess mode for a process that forks workers (Celery's prefork pool):
each child writes its samples to files in one directory, and the parent's exporter adds
them up. The directory must be set before any child makes a metric and emptied when the
parent starts, or counters of processes from a previous run would be added in."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bpm_metrics.exposition import MULTIPROC_ENV


def fresh_directory() -> Path:
    """The multiprocess directory (``PROMETHEUS_MULTIPROC_DIR``, else a new temporary one,
    exported for the children), emptied of a previous run's files."""
    named = os.environ.get(MULTIPROC_ENV, "").strip()
    directory = Path(named) if named else Path(tempfile.mkdtemp(prefix="bpm-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(directory)
    return directory


def process_gone(pid: int) -> None:
    """A child exited: its live gauges stop counting (its counters stay in the sums)."""
    from prometheus_client import multiprocess

    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
