"""``bpm external-worker``: run the ``bpm.sdk.Worker`` objects a module defines."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import click

from bpm.cli import render
from bpm.cli.runtime import broker_mode, distributed, embedded, handler_modules, import_handlers
from bpm.dispatch import Dispatcher, Job
from bpm.engine.engine import Engine
from bpm.errors import ConfigError
from bpm.sdk import Worker


class _SerialDispatcher:
    """Embedded mode: worker threads share one in-process queue, one at a time."""

    def __init__(self, inner: Dispatcher, lock: threading.RLock) -> None:
        self.inner, self.lock = inner, lock

    def dispatch(self, jobs: Sequence[Job]) -> None:
        with self.lock:
            self.inner.dispatch(jobs)


@click.command("external-worker")
@click.option(
    "--import",
    "imports",
    multiple=True,
    metavar="MODULE",
    required=False,
    help="A module that defines bpm.sdk.Worker objects (and may register handlers).",
)
def external_worker(imports: tuple[str, ...]) -> None:
    """Run every bpm.sdk.Worker that the imported modules define, until SIGTERM or Ctrl-C.

    Running tasks are finished (or unlocked) before it exits. With BPM_BROKER_URL the steps
    after a completion go to the Celery workers; without it they run in this process.
    """
    import_handlers(imports)
    workers = _workers(handler_modules(imports))
    with _engine() as engine:
        for worker in workers:
            worker.bind(engine.engine, engine.after_report)
        threads = [
            threading.Thread(target=w.run, kwargs={"handle_signals": False}, name=w.worker_id)
            for w in workers
        ]
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        for t in threads:
            t.start()
        render.line(f"running {', '.join(w.worker_id for w in workers)}; stop with SIGTERM")
        while not stop.wait(0.2) and any(t.is_alive() for t in threads):
            pass
        for worker in workers:
            worker.stop()
        for t in threads:
            t.join()
    abandoned = sum(w.abandoned for w in workers)
    render.line(
        "stopped: every running task was finished or unlocked"
        + (f" ({abandoned} unlocked; their handlers were still running)" if abandoned else "")
    )
    if abandoned:
        sys.stdout.flush()
        os._exit(0)  # do not wait for handler threads whose tasks were given back


def _workers(modules: list[str]) -> list[Worker]:
    found: list[Worker] = []
    for name in modules:
        module = importlib.import_module(name)
        for value in vars(module).values():  # a worker imported elsewhere too runs once
            if isinstance(value, Worker) and all(value is not w for w in found):
                found.append(value)
    if not found:
        raise ConfigError(
            f"no bpm.sdk.Worker is defined in {', '.join(modules) or 'any module'};"
            f" name the module with --import MODULE"
        )
    idle = [w.worker_id for w in found if not w.topics]
    if idle:
        raise ConfigError(
            f"worker {', '.join(map(repr, idle))} subscribes to no topic; "
            f'decorate a function with @worker.subscribe("TOPIC")'
        )
    return found


@dataclass(frozen=True)
class _Bound:
    engine: Engine
    after_report: Callable[[], None] | None


@contextmanager
def _engine() -> Iterator[_Bound]:
    if broker_mode():
        with distributed() as engine:
            yield _Bound(engine, None)
        return
    lock = threading.RLock()
    with embedded() as rt:
        rt.engine.dispatcher = _SerialDispatcher(rt.dispatcher, lock)

        def drain() -> None:
            """Run the steps a report made due, here (embedded mode has no other runner)."""
            with lock:
                rt.run_until_idle(timeout=0)

        yield _Bound(rt.engine, drain)
