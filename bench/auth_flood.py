"""What wrong secrets cost the other callers of one ``bpm serve`` process, and whether the
time of a refusal tells a known credential name from an unknown one.

On a fresh server and database: ``--callers`` verified workers each send fetchAndLock
(one task, a topic with none, so each call reads the database) one after another for
``--seconds``, first alone, then while ``--flood`` concurrent clients send wrong secrets for
the workers' own credential name (a new secret each time, so no cache of failures helps).
Prints the workers' median and p95 latency both ways and how many wrong secrets were refused.
Then ``--probes`` wrong secrets, one at a time, alternately for the known name and for names
no credential has, and prints the median time of each.

    python -m bench.auth_flood [--callers 4] [--flood 40] [--seconds 10] [--probes 40] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.server_long_polls import fresh_database, serve
from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.states import Role
from bpm.store import Database

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_auth_flood"
FETCH = "/external-task/fetchAndLock"
BODY = {
    "workerId": "bench",
    "maxTasks": 1,
    "topics": [{"topicName": "nothing-here", "lockDuration": 1000}],
}


async def _caller(client: httpx.AsyncClient, until: float, out: list[float]) -> None:
    while time.monotonic() < until:
        began = time.perf_counter()
        answer = await client.post(FETCH, json=BODY)
        out.append((time.perf_counter() - began) * 1000)
        assert answer.status_code == 200, answer.text


async def _flooder(client: httpx.AsyncClient, until: float, refused: list[int]) -> None:
    while time.monotonic() < until:
        answer = await client.post(FETCH, json=BODY, auth=("bench", secrets.token_urlsafe(16)))
        assert answer.status_code == 401, answer.text
        refused[0] += 1


async def latency(base: str, secret: str, args: argparse.Namespace, flood: int) -> None:
    limits = httpx.Limits(max_connections=args.flood + 10)
    async with (
        httpx.AsyncClient(base_url=base, auth=("bench", secret), timeout=120) as good,
        httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as bad,
    ):
        await good.post(FETCH, json=BODY)  # verified once: the callers are known
        until = time.monotonic() + args.seconds
        times: list[float] = []
        refused = [0]
        jobs = [_caller(good, until, times) for _ in range(args.callers)]
        jobs += [_flooder(bad, until, refused) for _ in range(flood)]
        await asyncio.gather(*jobs)
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    median = statistics.median(times)
    print(
        f"  {flood:>3} flooding: callers' calls {len(times):>5}, median {median:7.1f} ms,"
        f" p95 {p95:7.1f} ms; wrong secrets refused {refused[0]}"
    )


async def names(base: str, args: argparse.Namespace) -> None:
    known: list[float] = []
    unknown: list[float] = []
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        for i in range(args.probes):
            for name, out in (("bench", known), (f"nobody-{i}", unknown)):
                began = time.perf_counter()
                answer = await c.post(FETCH, json=BODY, auth=(name, secrets.token_urlsafe(16)))
                out.append((time.perf_counter() - began) * 1000)
                assert answer.status_code == 401
    print(
        f"  a wrong secret, one at a time: known name median {statistics.median(known):.1f} ms,"
        f" unknown names median {statistics.median(unknown):.1f} ms ({args.probes} each)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--callers", type=int, default=4)
    parser.add_argument("--flood", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--probes", type=int, default=40)
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
    base = f"http://127.0.0.1:{port}/engine-rest"
    try:
        print(f"{args.callers} verified callers, {args.seconds:g} s each run:")
        asyncio.run(latency(base, secret, args, 0))
        asyncio.run(latency(base, secret, args, args.flood))
        asyncio.run(names(base, args))
    finally:
        proc.terminate()
        proc.wait(10)
        db.dispose()


if __name__ == "__main__":
    main()
