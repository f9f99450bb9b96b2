"""Long polls on one ``bpm serve`` process: how many it holds, and how soon each returns once
a task it can take exists.

Opens ``--polls`` fetchAndLock requests (asyncResponseTimeout 120 s, one task each) against a
fresh server on a fresh database, lets them settle, then starts ``--tasks`` instances one by
one, ``--gap`` seconds apart, and prints, per task, the time from the start's commit to the
moment a poll's response carrying it arrived (p50, p95, max).

    python -m bench.server_long_polls [--polls 1000] [--tasks 100] [--gap 0.02] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.embedded import EmbeddedRuntime
from bpm.states import Role
from bpm.store import Database
from bpm.store.migrate import upgrade

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_polls"
ROOT = Path(__file__).resolve().parents[1]
BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="http://x">
  <bpmn:process id="bench_poll" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="bench"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end"/>
    <bpmn:endEvent id="end"/>
  </bpmn:process>
</bpmn:definitions>"""


def fresh_database(url: str) -> None:
    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        name = sql.Identifier(str(parsed.database))
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(name))
    db = Database(url)
    try:
        upgrade(db)
    finally:
        db.dispose()


def serve(
    url: str, port: int, log: Path, workers: int = 1, broker: str | None = None
) -> subprocess.Popen[bytes]:
    """``bpm serve`` on ``url``: embedded (it runs the steps itself), or with ``broker``."""
    env = {**os.environ, "BPM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    env.pop("BPM_BROKER_URL", None)
    if broker is not None:
        env["BPM_BROKER_URL"] = broker
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bpm.cli",
                "serve",
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    for _ in range(300):
        try:
            httpx.get(f"http://127.0.0.1:{port}/engine-rest/openapi.json", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(log.read_text())


async def run(args: argparse.Namespace, base: str, secret: str, rt: EmbeddedRuntime) -> None:
    # Clients of 50 connections each: one client's pool grows slow with a thousand.
    limits = httpx.Limits(max_connections=60, max_keepalive_connections=60)
    arrived: dict[str, float] = {}
    started: dict[str, float] = {}
    body = {
        "workerId": "bench",
        "maxTasks": 1,
        "asyncResponseTimeout": 120_000,
        "topics": [{"topicName": "bench", "lockDuration": 600_000}],
    }
    clients = [
        httpx.AsyncClient(base_url=base, auth=("bench", secret), limits=limits, timeout=130)
        for _ in range((args.polls + 49) // 50)
    ]
    try:

        async def poll(client: httpx.AsyncClient) -> None:
            while len(arrived) < args.tasks:
                answer = await client.post("/external-task/fetchAndLock", json=body)
                now = time.monotonic()
                for task in answer.json():
                    arrived[task["processInstanceId"]] = now

        polls = [asyncio.create_task(poll(clients[i // 50])) for i in range(args.polls)]
        await asyncio.sleep(args.settle)
        for _ in range(args.tasks):
            iid = await asyncio.to_thread(lambda: str(rt.engine.start("bench_poll").id))
            started[iid] = time.monotonic()
            await asyncio.to_thread(rt.run_until_idle, timeout=0)
            await asyncio.sleep(args.gap)
        deadline = time.monotonic() + 30
        while len(arrived) < args.tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for p in polls:
            p.cancel()
        await asyncio.gather(*polls, return_exceptions=True)
    finally:
        for client in clients:
            await client.aclose()
    # the start's commit is before its run_until_idle created the task: an upper bound
    lat = sorted((arrived[i] - started[i]) * 1000 for i in started if i in arrived)
    print(f"polls held: {args.polls}; tasks: {args.tasks}; returned: {len(lat)}")
    if lat:
        p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))]
        print(
            f"start -> response (ms): p50 {statistics.median(lat):.1f}  p95 {p95:.1f}"
            f"  max {lat[-1]:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--polls", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.02)
    # Opening a thousand polls (each authenticated, a first fetch) takes seconds on 2 cores.
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--url", default=os.environ.get("BPM_BENCH_DATABASE_URL", DEFAULT_URL))
    args = parser.parse_args()
    fresh_database(args.url)
    db = Database(args.url)
    secret = credentials.add(db, "bench", Role.WORKER, SYSTEM_CLOCK.now())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    log = Path(tempfile.mkdtemp()) / "server.log"
    proc = serve(args.url, port, log)
    rt = EmbeddedRuntime(args.url, migrate=False)
    try:
        rt.engine.deploy_bpmn(BPMN)
        asyncio.run(run(args, f"http://127.0.0.1:{port}/engine-rest", secret, rt))
    finally:
        proc.terminate()
        proc.wait(10)
        rt.close()
        db.dispose()


if __name__ == "__main__":
    main()
