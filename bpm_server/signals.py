"""One LISTEN connection per server process, fanned out to the long polls waiting in it.

The engine NOTIFYs channel ``bpm_external_tasks`` with a topic when a task of that topic can
be fetched (created, unlocked, failed with retries left). A notification wakes the first
waiting poll of its topic, not all of them: a thousand polls woken for one task would run a
thousand fetches for one lock. A woken poll fetches; when it took as many tasks as it asked
for (there may be more), or it gave up its turn, it wakes the next one (``pass_on``).

A poll stays registered while it fetches, so a notification that arrives during its fetch
wakes it again at once: none is lost between "found nothing" and "wait". After the
connection is lost and made again, every poll is woken, since notifications sent meanwhile
were not heard.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager, suppress

import psycopg
from sqlalchemy.engine import make_url

from bpm.api import NOTIFY_CHANNEL

log = logging.getLogger("bpm.server")
_RECONNECT_DELAY = 1.0


class Waiter:
    """One poll's place in the queues of its topics."""

    def __init__(self, key: int, topics: frozenset[str]) -> None:
        self.key, self.topics = key, topics
        self.woken = asyncio.Event()


class TaskSignals:
    def __init__(self, database_url: str) -> None:
        parsed = make_url(database_url)
        #: SQLite (the demo's one-process server) has no notifications: polls wait out
        #: their timeout, and the steps a request makes run in that request.
        self._listens = parsed.get_backend_name() == "postgresql"
        url = parsed.set(drivername="postgresql")
        self._dsn = url.render_as_string(hide_password=False)
        self._queues: dict[str, dict[int, Waiter]] = {}
        self._keys = itertools.count()
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()

    async def start(self) -> None:
        if self._listens:
            self._task = asyncio.create_task(self._listen(), name="bpm-task-signals")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    @property
    def waiting(self) -> int:
        return len({w.key for queue in self._queues.values() for w in queue.values()})

    @asynccontextmanager
    async def place(self, topics: Iterable[str]) -> AsyncIterator[Waiter]:
        """A place in the queues of ``topics`` for as long as the poll lasts. A poll that
        leaves with a wake it did not use hands it on."""
        waiter = Waiter(next(self._keys), frozenset(topics))
        for topic in waiter.topics:
            self._queues.setdefault(topic, {})[waiter.key] = waiter
        try:
            yield waiter
        finally:
            for topic in waiter.topics:
                queue = self._queues.get(topic)
                if queue is not None:
                    queue.pop(waiter.key, None)
                    if not queue:
                        del self._queues[topic]
            if waiter.woken.is_set():
                self.pass_on(waiter.topics)

    def notify(self, topic: str) -> None:
        """Wake the first poll of ``topic`` that is not already awake; it goes to the back."""
        queue = self._queues.get(topic)
        if not queue:
            return
        for key, waiter in queue.items():
            if not waiter.woken.is_set():
                waiter.woken.set()
                del queue[key]
                queue[key] = waiter
                return

    def pass_on(self, topics: Iterable[str]) -> None:
        for topic in topics:
            self.notify(topic)

    def wake_all(self) -> None:
        for queue in self._queues.values():
            for waiter in queue.values():
                waiter.woken.set()

    async def _listen(self) -> None:
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._dsn, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self.connected.set()
                    self.wake_all()  # what was sent while nobody listened
                    async for note in conn.notifies():
                        self.notify(note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning(
                    "task notifications lost (%s); listening again in %.0f s",
                    str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                    _RECONNECT_DELAY,
                )
            self.connected.clear()
            await asyncio.sleep(_RECONNECT_DELAY)
