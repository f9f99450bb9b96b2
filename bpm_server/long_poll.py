"""A fetchAndLock that waits: it holds an asyncio place (``signals.TaskSignals``), never a
thread, while nothing can be fetched, so one process holds thousands of waiting polls.

A woken poll fetches in a worker thread (the engine is synchronous). A client that went away
gives up its place; if it went away while its fetch was locking, what was locked is given
back, so no task stays locked for a worker that will never hear of it.

A poll may wait far longer than a credential is trusted without a look at its row (30 minutes
against ``BPM_SERVER_CREDENTIAL_TTL``), so it checks its caller again right before each fetch
and wakes at least once per TTL to do so: a credential removed, expired or narrowed while the
poll waits ends it with that refusal, and it locks nothing from then on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from datetime import datetime

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from bpm.api import Engine, LockedTask
from bpm_server.signals import TaskSignals

log = logging.getLogger("bpm.server")
#: How soon after a failed task's retry timeout a poll looks again.
_DUE_SLACK = 0.005
#: The shortest pause between checks of a waiting poll's caller (a TTL of 0 checks every
#: request, but must not make a waiting poll spin).
_MIN_RECHECK = 0.5


async def fetch_waiting(
    request: Request,
    engine: Engine,
    signals: TaskSignals,
    fetch: Callable[[], list[LockedTask]],
    topics: Sequence[str],
    max_tasks: int,
    timeout: float,
    filtered: bool,
    authorize: Callable[[], Awaitable[None]],
    recheck: float,
) -> list[LockedTask]:
    """Fetch until something is locked or ``timeout`` seconds pass (then ``[]``).
    ``filtered``: the poll's topics carry filters, so a task it cannot take may suit the
    next poll, which is then woken. ``authorize`` raises if the caller may no longer fetch
    these topics; it is awaited before every fetch and at least every ``recheck`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    gone = asyncio.Event()
    watcher = asyncio.create_task(_watch_disconnect(request, gone))
    try:
        async with signals.place(topics) as place:
            while True:
                place.woken.clear()
                if gone.is_set():
                    return []
                await authorize()
                found = await run_in_threadpool(fetch)
                if gone.is_set():
                    await _give_back(engine, found)
                    return []
                if len(found) >= max_tasks or (not found and filtered and place.woken.is_set()):
                    signals.pass_on(topics)
                left = deadline - loop.time()
                if found or left <= 0:
                    return found
                due = await run_in_threadpool(engine.next_retry_due, list(topics))
                wait = min(_until(left, due, engine.clock.now()), max(recheck, _MIN_RECHECK))
                await _wait(place.woken, gone, wait)
    finally:
        watcher.cancel()
        with suppress(asyncio.CancelledError):
            await watcher


def _until(left: float, due: datetime | None, now: datetime) -> float:
    if due is None:
        return left
    return min(left, max((due - now).total_seconds(), 0.0) + _DUE_SLACK)


async def _wait(woken: asyncio.Event, gone: asyncio.Event, seconds: float) -> None:
    waits = [asyncio.create_task(woken.wait()), asyncio.create_task(gone.wait())]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


async def _watch_disconnect(request: Request, gone: asyncio.Event) -> None:
    """The body is read already, so the next message is the client going away."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


async def _give_back(engine: Engine, found: list[LockedTask]) -> None:
    for task in found:
        try:
            await run_in_threadpool(engine.unlock, task.id, worker_id=task.worker_id)
        except Exception:
            log.warning("task %s: not given back after its poll went away", task.id, exc_info=True)
    if found:
        log.info("gave back %d task(s) locked for a poll that went away", len(found))
