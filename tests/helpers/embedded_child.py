"""A process that runs one instance of ``forked_line`` in embedded mode and is killed by the
handler of ``b0`` (SIGKILL, as a crash would), after it has journaled its run: what it leaves
behind is what a later process must recover.

    python -m tests.helpers.embedded_child URL JOURNAL
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from bpm.embedded import EmbeddedRuntime
from bpm.handlers import HandlerContext, HandlerRegistry

KILLED_AT = "b0"


def journaling(journal: Path, *, die_at: str | None = None) -> HandlerRegistry:
    """Handlers that append ``node key`` to ``journal``; the one at ``die_at`` then kills
    its process before the run can be recorded."""
    registry = HandlerRegistry()

    def work(ctx: HandlerContext) -> None:
        with journal.open("a") as out:
            out.write(f"{ctx.node_id} {ctx.idempotency_key}\n")
        if ctx.node_id == die_at:
            os.kill(os.getpid(), signal.SIGKILL)

    registry.register("work", work)
    return registry


def main() -> None:
    url, journal = sys.argv[1], Path(sys.argv[2])
    rt = EmbeddedRuntime(url, handlers=journaling(journal, die_at=KILLED_AT), migrate=False)
    rt.engine.start("forked_line", {})
    rt.run_until_idle(timeout=30)
    raise SystemExit("the handler of b0 should have killed this process")


if __name__ == "__main__":
    main()
