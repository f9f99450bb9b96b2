"""What ran, in order: handlers that write their names to one list (sagas, compensations)."""

from __future__ import annotations

import threading
from typing import Any

from bpm.handlers import HandlerContext
from tests.helpers.runtime import Calls


class Journal:
    """What ran, in order (handlers run in worker threads in some tests)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def add(self, calls: Calls, name: str, fn: Any = None) -> None:
        def run(ctx: HandlerContext) -> Any:
            with self._lock:
                self.lines.append(name)
            return fn(ctx) if fn is not None else None

        calls.add(name, run)
