"""A worker module for ``bpm external-worker --import tests.workers.ext_worker``: the steps
after its completions go to the Celery workers of the test's cluster."""

from __future__ import annotations

from datetime import timedelta

from bpm.sdk import ExternalTask, Worker

worker = Worker("ext-cluster", threads=2, long_poll=5.0, shutdown_grace=5.0)


@worker.subscribe("reserve", lock_duration=timedelta(seconds=30), variables=["n"])
def reserve(task: ExternalTask) -> dict[str, int]:
    return {"reserved": int(task.variables["n"])}
