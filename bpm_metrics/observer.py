"""The engine observer (``bpm.observe.Observer``) as Prometheus counters and histograms.

Label children are kept in a dict of their own: ``labels()`` takes the metric's lock and
builds a key on every call, and a step is measured on the engine's hot path. In Prometheus
multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set before this module makes its metrics)
every process writes its own file and the exporter adds them up.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from bpm.api import ConflictKind, HandlerOutcome
from bpm_metrics import families
from bpm_metrics.families import Family

#: A step is a transaction or two: milliseconds, seconds when the database is loaded.
STEP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: A handler calls out to other systems: up to its lock's minutes.
HANDLER_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
#: An instance lives from milliseconds (straight through) to weeks (waiting for people).
INSTANCE_BUCKETS = (0.1, 1.0, 10.0, 60.0, 300.0, 3600.0, 4 * 3600.0, 86400.0, 7 * 86400.0)


def counter(family: Family, registry: CollectorRegistry) -> Counter:
    return Counter(family.name, family.help, family.labels, registry=registry)


def histogram(family: Family, registry: CollectorRegistry, buckets: tuple[float, ...]) -> Histogram:
    return Histogram(family.name, family.help, family.labels, registry=registry, buckets=buckets)


class PrometheusObserver:
    """Counts what the engine reports into ``registry``."""

    enabled = True

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self._started = counter(families.INSTANCES_STARTED, registry)
        self._ended = counter(families.INSTANCES_ENDED, registry)
        self._lifetime = histogram(families.INSTANCE_DURATION, registry, INSTANCE_BUCKETS)
        self._steps = histogram(families.STEP_DURATION, registry, STEP_BUCKETS)
        self._handlers = histogram(families.HANDLER_DURATION, registry, HANDLER_BUCKETS)
        self._conflicts = counter(families.CONFLICTS, registry)
        self._children: dict[tuple[int, str, str], Any] = {}

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        key = (id(metric), labels[0], labels[1] if len(labels) > 1 else "")
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def step_done(self, node_type: str, seconds: float) -> None:
        self._child(self._steps, node_type).observe(seconds)

    def handler_done(self, handler: str, seconds: float, outcome: HandlerOutcome) -> None:
        self._child(self._handlers, handler, outcome).observe(seconds)

    def conflict(self, kind: ConflictKind) -> None:
        self._child(self._conflicts, kind).inc()

    def instance_started(self, process_key: str) -> None:
        self._child(self._started, process_key).inc()

    def instance_ended(self, process_key: str, state: str, seconds: float | None) -> None:
        self._child(self._ended, process_key, state).inc()
        if seconds is not None:
            self._child(self._lifetime, process_key).observe(seconds)


@cache
def process_observer() -> PrometheusObserver:
    """This process's observer, in the default registry (made once: a family is registered
    once per registry)."""
    return PrometheusObserver()
