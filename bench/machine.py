"""The machine a benchmark ran on, for the line printed under its table: figures from a
2-core laptop and a 64-core server mean nothing side by side without it."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import redis

from bench.engine_throughput import plain_dsn


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _postgres_version(url: str) -> str:
    with psycopg.connect(plain_dsn(url)) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "unknown"


def describe(database_url: str, broker: redis.Redis) -> dict[str, str]:
    """Date, cores, CPU model, memory, kernel, Python, PostgreSQL and Redis versions."""
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": str(os.cpu_count()),
        "CPU": _cpu_model(),
        "memory": f"{pages / 2**30:.1f} GiB",
        "kernel": platform.release(),
        "Python": platform.python_version(),
        "PostgreSQL": _postgres_version(database_url),
        "Redis": str(broker.info("server").get("redis_version", "unknown")),
    }
