"""What a scrape answers: this process's counters (or, in multiprocess mode, those of
every process writing to ``PROMETHEUS_MULTIPROC_DIR``) and any collectors of its own."""

from __future__ import annotations

import os
from collections.abc import Iterable

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

#: The directory Prometheus multiprocess mode shares between the processes of one host.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


class _ThisProcess(Collector):
    """The default registry's families (this process's counters, its runtime)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def scrape_registry(*own: Collector) -> CollectorRegistry:
    """A registry to render: every process's files in multiprocess mode, else this
    process's default registry; then ``own``."""
    registry = CollectorRegistry(auto_describe=False)
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        MultiProcessCollector(registry, directory)  # type: ignore[no-untyped-call]
    else:
        registry.register(_ThisProcess())
    for collector in own:
        registry.register(collector)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
