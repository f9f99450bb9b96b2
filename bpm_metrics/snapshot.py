"""The families read from the database, as a Prometheus collector over
``Engine.metrics_snapshot``: read at most once per ``ttl`` seconds however many scrapers
ask (several Prometheus servers, a dashboard refreshing), so a scrape never costs more
than one read of the live rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bpm.api import MetricsSnapshot
from bpm_metrics import families
from bpm_metrics.families import Family

Read = Callable[[], MetricsSnapshot]


class SnapshotCollector(Collector):
    """Gauges from the last snapshot younger than ``ttl`` seconds (else a fresh one)."""

    def __init__(self, read: Read, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._read, self._ttl, self._clock = read, ttl, clock
        self._lock = threading.Lock()
        self._last: tuple[float, MetricsSnapshot, float] | None = None

    def snapshot(self) -> tuple[MetricsSnapshot, float]:
        """The snapshot and how long reading it took; concurrent scrapes share one read."""
        with self._lock:
            now = self._clock()
            if self._last is None or now - self._last[0] >= self._ttl:
                started = time.perf_counter()
                snap = self._read()
                self._last = (now, snap, time.perf_counter() - started)
            return self._last[1], self._last[2]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        snap, took = self.snapshot()
        yield _gauge(families.LIVE_INSTANCES, snap.live_instances)
        yield _gauge(families.RUNNABLE, [(r.queue.value, r.count) for r in snap.runnable])
        yield _gauge(
            families.RUNNABLE_AGE, [(r.queue.value, r.oldest_seconds) for r in snap.runnable]
        )
        yield _gauge(families.LATE_TIMERS, [(f"{b:g}", n) for b, n in snap.late_timers])
        yield _gauge(families.EXPIRED_LOCKS, snap.expired_locks)
        yield _gauge(families.OPEN_INCIDENTS, snap.open_incidents)
        yield _gauge(families.EXTERNAL_TASKS, snap.external_tasks)
        yield _gauge(families.SNAPSHOT_SECONDS, [(took,)])

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families without reading the database (registering asks for them)."""
        for family in families.FAMILIES:
            if family.source is families.Source.DATABASE:
                yield GaugeMetricFamily(family.name, family.help, labels=family.labels)


def _gauge(
    family: Family, rows: tuple[tuple[str | float, ...], ...] | list[tuple[str | float, ...]]
) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(family.name, family.help, labels=family.labels)
    for row in rows:
        *labels, value = row
        gauge.add_metric([str(v) for v in labels], float(value))
    return gauge
