"""Real Celery worker and beat processes for the runtime tests, each test in its own namespace.

Every test gets its own database (cloned from the template) and its own queue prefix, so
workers of one test never see another test's messages.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import redis
from celery import Celery

from bpm.engine.engine import Engine
from bpm.store import Database, instances, tasks
from bpm_workers.config import settings_from_env
from bpm_workers.dispatcher import CeleryDispatcher
from tests.helpers.redis_db import redis_url

REDIS_URL = redis_url()


@dataclass
class Cluster:
    """Worker and beat processes sharing one database and one queue prefix."""

    env: dict[str, str]
    logs: Path
    db: Database
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return self.env["BPM_QUEUE_PREFIX"]

    @property
    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(REDIS_URL)

    def _spawn(self, name: str, args: list[str], extra_env: dict[str, str] | None) -> None:
        env = {**self.env, **(extra_env or {})}
        with (self.logs / f"{name}.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "bpm_workers", *args],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def worker(
        self,
        name: str,
        *,
        pool: str = "prefork",
        extra_env: dict[str, str] | None = None,
        queues: str | None = None,
    ) -> None:
        """A worker as the docs start it: without ``-Q`` it consumes the configured queues
        (``queues`` passes ``-Q``)."""
        pick = ["-Q", queues] if queues is not None else []
        self._spawn(
            name,
            [
                "worker",
                *pick,
                "-P",
                pool,
                "-c",
                "1",
                "-n",
                f"{name}@{self.prefix}",
                "-l",
                "info",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            extra_env,
        )

    def beat(self, name: str) -> None:
        schedule = self.logs / f"{name}-schedule"
        self._spawn(name, ["beat", "-s", str(schedule), "-l", "info"], None)

    def flower(self, port: int, login: str) -> None:
        """Flower as deploy/ starts it: on loopback, the login ``user:password`` read from
        ``FLOWER_BASIC_AUTH``."""
        self._spawn(
            "flower",
            ["flower", f"--port={port}", "--address=127.0.0.1"],
            {"FLOWER_BASIC_AUTH": login},
        )

    def wait_ready(self, timeout: float = 30) -> None:
        """Wait until every worker logged that it is ready."""
        deadline = time.monotonic() + timeout
        for name in self.procs:
            if name.startswith(("beat", "flower")):
                continue
            log = self.logs / f"{name}.log"
            while b"ready." not in log.read_bytes():
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name} did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.1)

    def sender(self, db: Database | None = None) -> Engine:
        """An engine that sends its follow-up jobs to this cluster's workers (as an API
        process of another service would)."""
        saved = dict(os.environ)
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("BPM_")})
        try:
            settings = settings_from_env()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return Engine(db or self.db, CeleryDispatcher(self.client(), settings))

    def client(self) -> Celery:
        """A Celery app such as another service has: no bpm code, only the broker URL."""
        return Celery(broker=self.env["BPM_BROKER_URL"], set_as_current=False)

    def start(
        self, key: str, variables: dict[str, Any], business_key: str, task_id: str | None = None
    ) -> None:
        self.client().send_task(
            "bpm.start_instance",
            queue=f"{self.prefix}bpm.starts",
            task_id=task_id,
            kwargs={"process_key": key, "variables": variables, "business_key": business_key},
        )

    def states(self) -> dict[str, str]:
        with self.db.transaction() as conn:
            return {str(r.business_key): r.state for r in instances.search(conn, limit=10_000)}

    def instance_count(self) -> int:
        """Every instance, counted (``states`` keeps one per business key)."""
        with self.db.transaction() as conn:
            return len(instances.search(conn, limit=100_000))

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}; states: {self.states()}\n" + self.tail()
                )
            time.sleep(0.2)

    def wait_all(
        self, count: int, timeout: float, states: frozenset[str] = frozenset({"COMPLETED"})
    ) -> dict[str, str]:
        def done() -> bool:
            now = self.states()
            return len(now) >= count and all(s in states for s in now.values())

        self.wait_until(done, timeout, f"{count} instances to end in {sorted(states)}")
        return self.states()

    def held(self, task: str) -> int:
        """Messages of this cluster for ``task`` that Redis holds as delivered but not yet
        acknowledged (a worker is running them, or died while it did)."""
        count = 0
        for raw in self.redis.hvals("unacked"):
            message, _exchange, routing_key = json.loads(raw)
            if (
                routing_key.startswith(self.prefix)
                and message.get("headers", {}).get("task") == task
            ):
                count += 1
        return count

    def calls(self, business_key: str, node: str) -> tuple[int, int]:
        """How often a handler ran for an instance, and with how many idempotency keys."""
        with self.db.transaction() as conn:
            row = conn.exec_driver_sql(
                "SELECT count(*), count(DISTINCT idempotency_key) FROM test_calls "
                "WHERE business_key = %(bk)s AND node = %(node)s",
                {"bk": business_key, "node": node},
            ).one()
        return int(row[0]), int(row[1])

    def running_pids(self, node: str) -> list[int]:
        with self.db.transaction() as conn:
            rows = conn.exec_driver_sql(
                "SELECT pid FROM test_calls WHERE node = %(node)s", {"node": node}
            ).all()
        return [int(r[0]) for r in rows]

    def instance_id(self, business_key: str) -> UUID:
        with self.db.transaction() as conn:
            rows = instances.search(conn, business_key=business_key)
        assert len(rows) == 1, rows
        return rows[0].id

    def task_rows(self, business_key: str) -> list[Any]:
        with self.db.transaction() as conn:
            return tasks.of_instance(conn, self.instance_id(business_key))

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        os.killpg(proc.pid, sig)
        proc.wait(timeout=10)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def tail(self, lines: int = 40) -> str:
        out = []
        for name in self.procs:
            text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
            out.append(f"--- {name} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(out)
