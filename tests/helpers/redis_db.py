"""The Redis database the tests' brokers use.

``BPM_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/9``) names the first one; under
pytest-xdist each worker process takes the next database up (``gw1`` -> 10, ...), so a test that
empties its broker (``FLUSHDB``) cannot drop the queues of a test running beside it.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

DEFAULT = "redis://127.0.0.1:6379/9"
DATABASES = 16  # Redis's default number of databases


def redis_url() -> str:
    base = os.environ.get("BPM_TEST_REDIS_URL", DEFAULT)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    offset = int(worker) if worker.isdigit() else 0
    parts = urlsplit(base)
    first = int(parts.path.strip("/") or 0)
    return parts._replace(path=f"/{(first + offset) % DATABASES}").geturl()
