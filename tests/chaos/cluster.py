"""The chaos test's processes: Celery workers, beat and external workers, each in its own
process group, watched like a supervisor would.

Each process runs in a new session, so a kill takes its whole group (a prefork worker's pool
children too) and ``stop()`` leaves nothing running. A process that exits without the test
killing it is recorded (an engine process must ride out a database or broker outage, not
die of it) and started again under a new name, as systemd's ``Restart=always`` would, so the
rest of the run still has its workers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bpm_workers.config import QUEUES


@dataclass
class Proc:
    name: str
    role: str
    popen: subprocess.Popen[bytes]
    started: float

    @property
    def pgid(self) -> int:
        return self.popen.pid  # start_new_session: the leader's pid is the group's id


@dataclass(frozen=True)
class Exit:
    """A process that ended without the test killing it."""

    name: str
    returncode: int | None
    at: float
    tail: str


@dataclass
class ChaosCluster:
    env: dict[str, str]
    logs: Path
    root: Path
    procs: dict[str, Proc] = field(default_factory=dict)
    #: Process groups the test killed, with when: a side effect whose row names one of them
    #: may be repeated (its run never reported back).
    killed: dict[int, float] = field(default_factory=dict)
    exits: list[Exit] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _watcher: threading.Thread | None = None

    @property
    def prefix(self) -> str:
        return self.env["BPM_QUEUE_PREFIX"]

    def _next(self, role: str) -> str:
        n = self._counts.get(role, 0) + 1
        self._counts[role] = n
        return f"{role}{n}"

    def _spawn(self, role: str, args: list[str], extra: dict[str, str] | None = None) -> str:
        with self._lock:
            name = self._next(role)
            env = {**self.env, **(extra or {})}
            if role == "ext":
                env["BPM_CHAOS_EXT_ID"] = f"chaos-{name}"
            if role == "worker":
                args = [*args, "-n", f"{name}@{self.prefix}"]
            if role == "beat":
                args = [*args, "-s", str(self.logs / f"{name}-schedule")]
            with (self.logs / f"{name}.log").open("ab") as log:
                popen = subprocess.Popen(
                    [sys.executable, "-m", *args],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    cwd=self.root,
                )
            self.procs[name] = Proc(name, role, popen, time.time())
            return name

    def worker(self) -> str:
        queues = ",".join(f"{self.prefix}{q}" for q in QUEUES)
        return self._spawn(
            "worker",
            [
                "celery",
                "-A",
                "bpm_workers",
                "worker",
                "-Q",
                queues,
                "-P",
                "prefork",
                "-c",
                "1",
                "-l",
                "info",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
        )

    def beat(self) -> str:
        return self._spawn("beat", ["celery", "-A", "bpm_workers", "beat", "-l", "info"])

    def ext(self) -> str:
        return self._spawn(
            "ext", ["bpm.cli.main", "external-worker", "--import", "tests.chaos.ext_worker"]
        )

    def start(self, role: str) -> str:
        return {"worker": self.worker, "beat": self.beat, "ext": self.ext}[role]()

    def alive(self, role: str) -> list[str]:
        with self._lock:
            return [
                p.name for p in self.procs.values() if p.role == role and p.popen.poll() is None
            ]

    def wait_ready(self, names: list[str], timeout: float = 90) -> None:
        """Until every named Celery worker logged ``ready.`` and every external worker its
        ``running`` line."""
        deadline = time.monotonic() + timeout
        for name in names:
            proc = self.procs[name]
            marker = {"worker": b"ready.", "ext": b"running ", "beat": b"beat: Starting"}[proc.role]
            log = self.logs / f"{name}.log"
            while marker not in log.read_bytes():
                if proc.popen.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"{name} did not start:\n" + self.tail_of(name, 60))
                time.sleep(0.1)

    def kill(self, name: str) -> float:
        """SIGKILL the process's whole group (no shutdown of any kind); returns when."""
        with self._lock:
            proc = self.procs[name]
            at = time.time()
            self.killed[proc.pgid] = at
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pgid, signal.SIGKILL)
            proc.popen.wait(timeout=30)
            return at

    # --- supervision ---------------------------------------------------------------------

    def watch(self) -> None:
        self._watcher = threading.Thread(target=self._watch, name="chaos-supervisor", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                for proc in list(self.procs.values()):
                    code = proc.popen.poll()
                    if code is None or proc.pgid in self.killed or proc.name in self._seen():
                        continue
                    self.exits.append(
                        Exit(proc.name, code, time.time(), self.tail_of(proc.name, 300))
                    )
                    # A pool child may outlive its dead parent: end the group while its id
                    # is still ours (the kernel reuses no id a living member still holds).
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pgid, signal.SIGKILL)
                    self.start(proc.role)

    def _seen(self) -> set[str]:
        return {e.name for e in self.exits}

    def stop(self) -> None:
        """Stop supervising, then SIGTERM every running group, SIGKILL what is left of them
        after 15 s. Groups that ended before were killed whole at the time (``kill``, or the
        supervisor's check), so no id that may have been reused since is signalled."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        with self._lock:
            live = [p for p in self.procs.values() if p.popen.poll() is None]
            for proc in live:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pgid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            for proc in live:
                try:
                    proc.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            for proc in live:  # the whole group: a pool child may outlive its parent
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pgid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.popen.wait(timeout=10)

    # --- logs ----------------------------------------------------------------------------

    def log_text(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def tail_of(self, name: str, lines: int = 40) -> str:
        return "\n".join(self.log_text(name).splitlines()[-lines:])

    def tails(self, lines: int = 25) -> str:
        return "\n".join(
            f"--- {name} ({p.role}, exit {p.popen.poll()}) ---\n" + self.tail_of(name, lines)
            for name, p in self.procs.items()
        )
