"""A plain Celery chain of no-op tasks: the baseline bpm's distributed runtime is compared to.

Same broker, same JSON serializer, same acks_late/prefetch settings as bpm's workers.
"""

from __future__ import annotations

import os
import time

from celery import Celery

from bench.dist_handlers import record

app = Celery("bench_plain", broker=os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/8"))
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue=os.environ.get("BENCH_QUEUE", "bench.plain"),
)


@app.task(name="bench.step")
def step(run: str, index: int) -> None:
    record(run, index, time.time())
