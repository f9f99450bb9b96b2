"""Running a benchmark's clients on threads, with a failure in any of them stopping the run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def run_concurrently(client: Callable[[int], None], count: int) -> float:
    """Run ``client(0..count-1)`` on threads; seconds taken. A client that raises fails the
    benchmark instead of silently skewing its figures."""
    errors: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            client(n)
        except BaseException as exc:
            errors.append(exc)
            raise

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"benchmark client failed: {errors[0]!r}")
    return time.perf_counter() - started
