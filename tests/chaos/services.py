"""Private PostgreSQL and Redis servers that the chaos test owns, crashes and restarts.

The chaos test stops its servers on purpose, so it must never use the machine's own ones
(ports 5432 and 6379): everything here runs from a temporary directory on a free port, and
``stop()`` removes it. Every method that stops a server has a counterpart that starts it
again with the same data, so a fault leaves nothing behind but what it was meant to do.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import redis

#: How long a server may take to come up on a loaded two-core machine.
START_TIMEOUT = 60.0


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bin_dir() -> Path | None:
    """The newest installed PostgreSQL server binaries (``initdb``, ``pg_ctl``), if any."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    for initdb in reversed(found):
        bin_dir = Path(initdb).parent
        if (bin_dir / "pg_ctl").exists() and (bin_dir / "postgres").exists():
            return bin_dir
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    return None


def _has_postgres_user() -> bool:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return shutil.which("runuser") is not None


def missing_binaries() -> str | None:
    """Why the chaos test cannot run here, or None when it can."""
    missing = []
    if postgres_bin_dir() is None:
        missing.append(
            "the PostgreSQL server binaries (initdb, pg_ctl: /usr/lib/postgresql/*/"
            "bin; apt-get install postgresql)"
        )
    if shutil.which("redis-server") is None:
        missing.append("redis-server (apt-get install redis-server)")
    if os.geteuid() == 0 and not _has_postgres_user():
        missing.append(
            "a 'postgres' OS user and runuser, to run initdb as (it refuses to run as root)"
        )
    if missing:
        return "the chaos suite starts private servers and needs " + " and ".join(missing)
    return None


def _wait(check: Callable[[], bool], what: str, log: Path | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise RuntimeError(f"{what} did not come up within {START_TIMEOUT:.0f} s\n{tail}")
        time.sleep(0.1)


class PrivatePostgres:
    """A throw-away PostgreSQL cluster: ``initdb`` in a temporary directory, trust auth on
    127.0.0.1, a free port, its socket in its own directory.

    initdb refuses to run as root, so when the test runs as root every server command runs
    as the ``postgres`` OS user (``runuser``), the directory handed over to it.
    """

    def __init__(self) -> None:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise RuntimeError(missing_binaries() or "no PostgreSQL binaries")
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="bpm-chaos-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(
            cmd, capture_output=True, text=True, cwd=self.root, timeout=START_TIMEOUT + 30
        )
        if check and done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args[:2])} failed ({done.returncode}):\n"
                f"{done.stdout}\n{done.stderr}\n"
                + (self.log.read_text(errors="replace")[-3000:] if self.log.exists() else "")
            )
        return done

    def init(self) -> None:
        # fsync off: a crash here is the server process dying (pg_ctl -m immediate), never
        # the machine, so the kernel still holds every WAL write; it makes the test faster.
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.root}'\nfsync = off\n"
                "max_connections = 200\nlog_min_messages = warning\n"
            )

    def start(self) -> None:
        """Start (or restart after a crash, with crash recovery) and wait for connections."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            str(int(START_TIMEOUT)),
            "start",
        )
        _wait(self.accepting, f"PostgreSQL on port {self.port}", self.log)

    def crash(self) -> None:
        """Stop the server the way a crash does: no checkpoint, every connection cut at once
        (``pg_ctl stop -m immediate``); the next start runs crash recovery."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status", check=False).returncode == 0

    def accepting(self) -> bool:
        try:
            with psycopg.connect(self.url("postgres", driver="postgresql"), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def url(
        self, database: str, *, driver: str = "postgresql+psycopg", port: int | None = None
    ) -> str:
        """A URL for ``database``, straight to the server or (``port``) through a proxy."""
        return f"{driver}://postgres@127.0.0.1:{port or self.port}/{database}"

    def create_database(self, name: str, template: str | None = None) -> None:
        with psycopg.connect(self.url("postgres", driver="postgresql"), autocommit=True) as c:
            suffix = f' TEMPLATE "{template}"' if template else ""
            c.execute(f'CREATE DATABASE "{name}"{suffix}'.encode())

    def dump(self, database: str, target: Path) -> None:
        """``pg_dump`` of ``database`` (plain SQL) to ``target``: what a failed run leaves
        for a post-mortem, since the cluster itself is removed."""
        scratch = self.root / f"{database}.sql"
        self._run(
            "pg_dump",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-f",
            str(scratch),
            database,
        )
        shutil.move(scratch, target)

    def stop(self) -> None:
        """Stop the server if it runs and remove its directory: the session's last word."""
        try:
            if self.data.exists() and self.running():
                self._run(
                    "pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False
                )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """A throw-away Redis with an append-only file, so a restart (SIGTERM, then the same
    command on the same directory) reloads every queued and unacknowledged message."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="bpm-chaos-redis-"))
        self.port = free_port()
        self.log = self.root / "redis.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> None:
        args = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.root),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--logfile",
            str(self.log),
            "--daemonize",
            "no",
        ]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        _wait(self.answering, f"Redis on port {self.port}", self.log)

    def answering(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(
                f"redis-server exited with {self.proc.returncode}:\n"
                + self.log.read_text(errors="replace")[-3000:]
            )
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def shutdown(self) -> None:
        """SIGTERM: Redis writes out its append-only file and exits (as ``SHUTDOWN`` does)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        try:
            self.shutdown()
        finally:
            if self.proc is not None and self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            shutil.rmtree(self.root, ignore_errors=True)
