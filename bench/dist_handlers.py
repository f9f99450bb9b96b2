"""The no-op step both systems run in bench/distributed_throughput.py.

Each run records its start and end (wall clock) in Redis, so step latency (one handler's end to
the next one's start) is measured the same way for bpm and for the plain Celery chain.
"""

from __future__ import annotations

import os
import time

import redis

import bpm
from bpm.handlers import HandlerContext

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/8")
_redis = redis.Redis.from_url(REDIS_URL)


def record(run: str, step: int, started: float) -> None:
    _redis.rpush(f"bench:{run}", f"{step}:{started}:{time.time()}")


@bpm.handler("bench_step")
def bench_step(ctx: HandlerContext) -> None:
    record(str(ctx.business_key), int(ctx.node_id[1:]), time.time())
