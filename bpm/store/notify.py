"""Waiting for new external tasks without polling: PostgreSQL LISTEN/NOTIFY."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import make_url

from bpm.store.db import Database
from bpm.store.tasks import NOTIFY_CHANNEL


class Listener:
    """Wakes up when a task of one of ``topics`` is created (or offered again)."""

    def __init__(self, conn: object | None, topics: set[str]) -> None:
        self._conn = conn
        self._topics = topics

    @property
    def broken(self) -> bool:
        """The connection is gone (a server restart, an idle timeout): listen anew."""
        conn: Any = self._conn
        return conn is not None and bool(conn.closed or conn.broken)

    def drain(self) -> None:
        """Read what arrived, so the server's notification queue is not held back by an
        unread connection while nobody waits."""
        if self._conn is not None and not self.broken:
            for _ in self._conn.notifies(timeout=0):  # type: ignore[attr-defined]
                pass

    def wait(self, seconds: float) -> bool:
        """True when a matching notification arrived within ``seconds``."""
        if self._conn is None:  # SQLite: no notifications, check again shortly
            time.sleep(min(seconds, 0.05))
            return True
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            for note in self._conn.notifies(timeout=left, stop_after=1):  # type: ignore[attr-defined]
                if note.payload in self._topics:
                    return True
        return False


@contextmanager
def listen(db: Database, topics: set[str]) -> Iterator[Listener]:
    """LISTEN before looking for work, so a task created in between is not missed."""
    if not db.is_postgres:
        yield Listener(None, topics)
        return
    import psycopg

    url = make_url(db.url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
        yield Listener(conn, topics)
