"""Riding out a database outage: try again with backoff while PostgreSQL is unreachable.

A restart, a crash recovery or a cut network makes every transaction fail for seconds to
minutes. Work that exists nowhere but in the caller's memory (a handler's finished result, a
start request whose message would otherwise be acknowledged) must wait for the database
instead of being dropped; everything it retries is idempotent, so a try whose COMMIT broke
and did land is harmless to repeat.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from bpm.store.db import DatabaseUnavailable

log = logging.getLogger("bpm.outage")
T = TypeVar("T")

#: First pause after a failed try, and the longest pause between two tries (seconds).
FIRST_PAUSE, LONGEST_PAUSE = 0.2, 5.0


def pauses(first: float = FIRST_PAUSE, longest: float = LONGEST_PAUSE) -> Callable[[int], float]:
    """Exponential backoff with full jitter, so workers that lost the database together do
    not all knock again in the same instant when it comes back."""

    def pause(attempt: int) -> float:
        return random.uniform(first / 2, min(longest, first * 2 ** min(attempt, 32)))

    return pause


def until_available(
    fn: Callable[[], T], *, within: float, what: str, sleep: Callable[[float], None] = time.sleep
) -> T:
    """``fn()``, tried again while it raises ``DatabaseUnavailable``, for up to ``within``
    seconds; the last ``DatabaseUnavailable`` is raised when time runs out."""
    deadline = time.monotonic() + within
    pause = pauses()
    attempt = 0
    while True:
        try:
            result = fn()
        except DatabaseUnavailable as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            wait = min(pause(attempt), left)
            if attempt == 0:
                log.warning("%s: %s; trying again for up to %.0f s", what, exc, left)
            attempt += 1
            sleep(wait)
            continue
        if attempt:
            log.warning("%s: the database answered again after %d tries", what, attempt + 1)
        return result
