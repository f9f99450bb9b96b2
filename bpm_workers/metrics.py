"""A worker's metrics: with ``BPM_WORKER_METRICS_PORT`` set, the Celery main process serves
``/metrics`` on that port (``BPM_WORKER_METRICS_HOST``, default 127.0.0.1), adding up what
its pool's processes counted (Prometheus multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``,
emptied at start): jobs by name and outcome, their durations, and the engine's own families
(steps, handler runs, conflicts, instance starts and ends). Unset, nothing is measured.
"""

from __future__ import annotations

import logging
import os
import time
from functools import cache
from typing import Any

from bpm.errors import ConfigError
from bpm.observe import NO_OBSERVER, Observer

log = logging.getLogger("bpm.worker")

PORT_ENV = "BPM_WORKER_METRICS_PORT"
HOST_ENV = "BPM_WORKER_METRICS_HOST"


def metrics_port() -> int | None:
    """The configured port, None when metrics are off."""
    raw = os.environ.get(PORT_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigError(f"{PORT_ENV}={raw[:20]!r} is not a TCP port (1 to 65535)")
    return int(raw)


def start_exporter() -> None:
    """In the Celery main process, before its pool starts: a fresh multiprocess directory
    for the children to write to, and the port that adds them up."""
    port = metrics_port()
    if port is None:
        return
    from bpm_metrics.exporter import MetricsApp, ReaderCheck, is_loopback, serve
    from bpm_metrics.exposition import scrape_registry
    from bpm_metrics.multiproc import fresh_directory

    directory = fresh_directory()
    host = os.environ.get(HOST_ENV, "127.0.0.1").strip() or "127.0.0.1"
    check = ReaderCheck(os.environ.get("BPM_DATABASE_URL"), loopback=is_loopback(host))
    serve(MetricsApp(scrape_registry(), check), host, port)
    log.info("metrics on http://%s:%d/metrics (files in %s)", host, port, directory)


def worker_gone(pid: int) -> None:
    if metrics_port() is not None:
        from bpm_metrics.multiproc import process_gone

        process_gone(pid)


def engine_observer() -> Observer:
    """The engine's observer in this process: Prometheus's when metrics are on."""
    if metrics_port() is None:
        return NO_OBSERVER
    from bpm_metrics.observer import process_observer

    return process_observer()


@cache
def _job_families() -> tuple[Any, Any] | None:
    if metrics_port() is None:
        return None
    from prometheus_client import REGISTRY

    from bpm_metrics import families
    from bpm_metrics.observer import HANDLER_BUCKETS, counter, histogram

    return (
        counter(families.WORKER_JOBS, REGISTRY),
        histogram(families.WORKER_JOB_DURATION, REGISTRY, HANDLER_BUCKETS),
    )


def job_done(name: str, outcome: str, started: float) -> None:
    """Count one job (its outcome's first word: a scan's counts and a start's id are not
    labels) and its duration since ``started`` (``time.perf_counter``)."""
    found = _job_families()
    if found is None:
        return
    jobs, durations = found
    jobs.labels(name, outcome_label(outcome)).inc()
    durations.labels(name).observe(time.perf_counter() - started)


def outcome_label(outcome: str) -> str:
    word = outcome.split(" ", 1)[0]
    if "=" in word:
        return "scanned"
    return word if word.isalpha() and len(word) <= 24 else "other"
