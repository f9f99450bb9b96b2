"""The faults the chaos test injects, and the record of when each one happened.

Each fault restores what it broke in a ``finally`` (the server restarted, the proxy
listening again, a replacement process started), so a failing or interrupted test never
leaves a service down. The windows are kept so the checks can tell a side effect that a
fault made happen twice from one the engine repeated for no reason.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.chaos.cluster import ChaosCluster
from tests.chaos.services import PrivatePostgres, PrivateRedis
from tests.helpers.tcp_proxy import TcpProxy

PG_CRASH, REDIS_RESTART, KILL_WORKER, KILL_EXT, CUT = (
    "pg-crash",
    "redis-restart",
    "kill-worker",
    "kill-ext",
    "cut",
)
KINDS = (PG_CRASH, REDIS_RESTART, KILL_WORKER, KILL_EXT, CUT)
#: Seconds after a window's recorded end during which its consequences still count: the
#: test sees a server back before every worker has noticed (its next connect or ping).
SETTLE = 1.0


@dataclass(frozen=True)
class Window:
    kind: str
    start: float
    end: float
    detail: str

    def overlaps(self, first: float, second: float) -> bool:
        """Whether this fault happened between two side effects (at ``first`` and
        ``second``), or while the first one's outcome was still on its way."""
        return self.start <= second and self.end + SETTLE >= first


@dataclass(frozen=True)
class Planned:
    at: float  # seconds after the first start was sent
    kind: str
    seconds: float  # how long the service stays down (kills: until the replacement)


@dataclass
class Faults:
    pg: PrivatePostgres
    redis: PrivateRedis
    proxy: TcpProxy
    cluster: ChaosCluster
    windows: list[Window] = field(default_factory=list)
    #: Called once the broker is back: the sender resends the starts it cannot confirm.
    on_broker_back: Callable[[], int] | None = None

    @contextmanager
    def _window(self, kind: str, detail: str) -> Iterator[None]:
        start = time.time()
        try:
            yield
        finally:
            self.windows.append(Window(kind, start, time.time(), detail))

    def inject(self, planned: Planned, rng: random.Random) -> None:
        action: dict[str, Callable[[], None]] = {
            PG_CRASH: lambda: self.pg_crash(planned.seconds),
            REDIS_RESTART: lambda: self.redis_restart(planned.seconds),
            KILL_WORKER: lambda: self.kill("worker", planned.seconds, rng),
            KILL_EXT: lambda: self.kill("ext", planned.seconds, rng),
            CUT: lambda: self.cut(planned.seconds),
        }
        action[planned.kind]()

    def pg_crash(self, seconds: float) -> None:
        """PostgreSQL dies (no checkpoint, every connection gone), comes back after
        ``seconds`` with crash recovery."""
        with self._window(PG_CRASH, f"down {seconds:.1f} s"):
            try:
                self.pg.crash()
                time.sleep(seconds)
            finally:
                self.pg.start()

    def redis_restart(self, seconds: float) -> None:
        """Redis shuts down (SIGTERM: it writes its append-only file), stays down
        ``seconds``, then starts on the same directory and reloads every message. The sender
        then sends again the starts it cannot confirm (a worker may have popped one and lost
        it with the connection)."""
        with self._window(REDIS_RESTART, f"down {seconds:.1f} s"):
            try:
                self.redis.shutdown()
                time.sleep(seconds)
            finally:
                self.redis.start()
        resent = self.on_broker_back() if self.on_broker_back else 0
        last = self.windows[-1]
        self.windows[-1] = Window(
            last.kind, last.start, last.end, f"{last.detail}, {resent} starts sent again"
        )

    def cut(self, seconds: float) -> None:
        """Every connection between the workers and PostgreSQL dies; none gets through for
        ``seconds``."""
        with self._window(CUT, f"{seconds:.1f} s"):
            dropped = self.proxy.cut()
            try:
                time.sleep(seconds)
            finally:
                self.proxy.restore()
        self.windows[-1] = Window(
            CUT,
            self.windows[-1].start,
            self.windows[-1].end,
            f"{seconds:.1f} s, {dropped} connections dropped",
        )

    def kill(self, role: str, seconds: float, rng: random.Random) -> None:
        """kill -9 of one process of ``role`` (its whole group); a replacement starts after
        ``seconds``."""
        victims = self.cluster.alive(role)
        if not victims:
            return
        victim = rng.choice(victims)
        with self._window(KILL_WORKER if role == "worker" else KILL_EXT, victim):
            try:
                self.cluster.kill(victim)
                time.sleep(seconds)
            finally:
                replacement = self.cluster.start(role)
        self.windows[-1] = Window(
            self.windows[-1].kind,
            self.windows[-1].start,
            self.windows[-1].end,
            f"{victim} -> {replacement}",
        )

    def timeline(self, since: float) -> str:
        return "\n".join(
            f"  +{w.start - since:6.1f} s .. +{w.end - since:6.1f} s  {w.kind:13} {w.detail}"
            for w in self.windows
        )


def bounded_plan(kinds: Sequence[str] = KINDS) -> list[Planned]:
    """Every fault once, spread over the first minute, each alone (what failed is clear);
    only those of ``kinds``.

    Each falls 0.2 s after a whole second: the starts go out every 0.4 s, and a worker
    killed at the very moment a start is pushed loses it (Redis hands the message to the
    dead connection's pending BRPOP; docs/chaos.md, "Known limits"). Random times (the long
    form) meet that window as rarely as production does."""
    plan = [
        Planned(6.2, KILL_WORKER, 1.0),
        Planned(13.2, PG_CRASH, 4.0),
        Planned(24.2, REDIS_RESTART, 3.0),
        Planned(33.2, KILL_EXT, 1.0),
        Planned(40.2, CUT, 4.0),
        Planned(50.2, KILL_WORKER, 1.0),
    ]
    return [p for p in plan if p.kind in kinds]


def random_plan(rng: random.Random, duration: float, kinds: Sequence[str] = KINDS) -> list[Planned]:
    """Faults of random kinds (of ``kinds``) at random times over ``duration`` seconds (the
    long form)."""
    plan: list[Planned] = []
    at = rng.uniform(3, 10)
    while kinds and at < duration:
        kind = rng.choice(list(kinds))
        seconds = rng.uniform(0.5, 2) if kind in (KILL_WORKER, KILL_EXT) else rng.uniform(1, 8)
        plan.append(Planned(at, kind, seconds))
        at += seconds + rng.uniform(4, 25)
    return plan


def kinds_from(value: str | None) -> tuple[str, ...]:
    """``BPM_CHAOS_FAULTS``: a comma-separated subset of ``KINDS``, ``none``, or unset (all)."""
    if not value:
        return KINDS
    if value.strip() == "none":
        return ()
    chosen = tuple(k.strip() for k in value.split(",") if k.strip())
    unknown = [k for k in chosen if k not in KINDS]
    if unknown:
        raise ValueError(f"BPM_CHAOS_FAULTS: unknown fault(s) {unknown}; known: {list(KINDS)}")
    return chosen
