"""A worker module for `bpm external-worker --import tests.sdk.sleepy_worker` (SIGTERM test)."""

from __future__ import annotations

import time
from datetime import timedelta

from bpm.sdk import ExternalTask, Worker

worker = Worker("sleepy", threads=2, long_poll=1.0, shutdown_grace=1.0)


@worker.subscribe("sleepy", lock_duration=timedelta(seconds=60))
def sleep_long(task: ExternalTask) -> None:
    time.sleep(30)
