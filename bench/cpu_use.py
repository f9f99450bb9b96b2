"""CPU seconds by role (this process, its other descendants, a server's process tree,
PostgreSQL's processes), read from ``/proc``: where a benchmark's time goes on a machine
whose cores the clients, the server and the database share. Linux only; elsewhere every
figure is 0."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class _Proc:
    pid: int
    parent: int
    name: str
    seconds: float


def _read(pid: int) -> _Proc | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    # After the name: state, ppid, ..., utime (14th field overall), stime (15th).
    return _Proc(pid, int(fields[1]), name, (int(fields[11]) + int(fields[12])) / TICK)


def _all() -> dict[int, _Proc]:
    found = {}
    if PROC.is_dir():
        for entry in PROC.iterdir():
            if entry.name.isdigit() and (p := _read(int(entry.name))) is not None:
                found[p.pid] = p
    return found


def _tree(procs: dict[int, _Proc], root: int) -> set[int]:
    members, grew = {root}, True
    while grew:
        more = {p.pid for p in procs.values() if p.parent in members} - members
        grew, members = bool(more), members | more
    return members


def snapshot(server_pid: int | None = None) -> dict[str, float]:
    """CPU seconds so far of ``this`` process, its other descendants (``clients``), the
    process tree of ``server_pid`` (``server``) and every ``postgres`` process."""
    procs = _all()
    me = os.getpid()
    server = _tree(procs, server_pid) if server_pid is not None else set()
    mine = _tree(procs, me) - server - {me}
    times = os.times()
    return {
        "this": times.user + times.system,
        "clients": sum(procs[p].seconds for p in mine),
        "server": sum(procs[p].seconds for p in server),
        "postgres": sum(p.seconds for p in procs.values() if p.name == "postgres"),
    }


def per_task(before: dict[str, float], after: dict[str, float], tasks: int) -> dict[str, float]:
    """Milliseconds of CPU per task, by role (processes that exited in between are lost)."""
    return {k: (after[k] - before.get(k, 0.0)) * 1000 / max(tasks, 1) for k in after}


def by_role(worker_pids: list[int], postgres_pids: set[int]) -> dict[str, dict[int, float]]:
    """CPU seconds so far of each process by role: the process trees of ``worker_pids``
    (``worker``), the PostgreSQL backends ``postgres_pids`` (those of the benchmark's
    database, not the other work the server carries) and every ``redis-server``."""
    procs = _all()
    workers: set[int] = set()
    for pid in worker_pids:
        workers |= _tree(procs, pid)
    return {
        "worker": {p: procs[p].seconds for p in workers if p in procs},
        "postgres": {p: procs[p].seconds for p in postgres_pids if p in procs},
        "redis": {p.pid: p.seconds for p in procs.values() if p.name == "redis-server"},
    }


def spent(
    before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]
) -> dict[str, float]:
    """CPU seconds by role between two ``by_role`` readings; a process first seen in the
    second started after the first, from nothing."""
    return {
        role: sum(s - before.get(role, {}).get(pid, 0.0) for pid, s in after[role].items())
        for role in after
    }
