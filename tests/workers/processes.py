"""Process definitions the runtime tests deploy."""

from __future__ import annotations

from typing import Any

from bpm.definitions import ProcessBuilder
from tests.helpers import processes as shared


def branches_and_subprocess() -> dict[str, Any]:
    """Parallel branches, a subprocess, and a handler that fails once then succeeds."""
    inner = (
        ProcessBuilder("inner")
        .start("s_start")
        .service_task("s1", handler="noop")
        .service_task("s2", handler="noop")
        .end("s_end")
        .sequence("s_start", "s1", "s2", "s_end")
    )
    return (
        ProcessBuilder("branches")
        .start()
        .parallel_gateway("fork")
        .service_task("a", handler="noop")
        .service_task("b", handler="flaky", retry={"max_attempts": 3, "backoff": "PT0.2S"})
        .sub_process("sub", inner)
        .parallel_gateway("join")
        .service_task("after", handler="noop")
        .end()
        .sequence("start", "fork")
        .flow("fork", "a")
        .flow("fork", "b")
        .flow("fork", "sub")
        .flow("a", "join")
        .flow("b", "join")
        .flow("sub", "join")
        .sequence("join", "after", "end")
        .build()
    )


def steps(
    key: str, count: int, *, timeout: str | None = None, retry: dict[str, Any] | None = None
) -> dict[str, Any]:
    b = ProcessBuilder(key).start()
    names = [f"n{i}" for i in range(count)]
    for name in names:
        b.service_task(name, handler="noop", timeout=timeout, retry=retry)
    return b.end().sequence("start", *names, "end").build()


def slow_then_noop() -> dict[str, Any]:
    return (
        ProcessBuilder("slow")
        .start()
        .service_task(
            "slow", handler="slow", timeout="PT3S", retry={"max_attempts": 3, "backoff": "PT0S"}
        )
        .service_task("after", handler="noop")
        .end()
        .sequence("start", "slow", "after", "end")
        .build()
    )


def suicide() -> dict[str, Any]:
    return (
        ProcessBuilder("suicide")
        .start()
        .service_task(
            "die", handler="suicide", timeout="PT2S", retry={"max_attempts": 2, "backoff": "PT0S"}
        )
        .end()
        .sequence("start", "die", "end")
        .build()
    )


def timed(seconds: int = 2) -> dict[str, Any]:
    """A timer, then a handler: the timer must fire exactly once, whoever scans."""
    return (
        ProcessBuilder("timed")
        .start()
        .timer("pause", duration=f"PT{seconds}S")
        .service_task("after", handler="noop")
        .end()
        .sequence("start", "pause", "after", "end")
        .build()
    )


def escalated(seconds: int = 2) -> dict[str, Any]:
    """A user task nobody completes; its interrupting boundary timer takes over."""
    return (
        ProcessBuilder("escalated")
        .start()
        .user_task("review")
        .timer_boundary("late", attached_to="review", duration=f"PT{seconds}S")
        .service_task("escalate", handler="noop")
        .end("late_end")
        .service_task("after", handler="noop")
        .end()
        .sequence("start", "review", "after", "end")
        .sequence("late", "escalate", "late_end")
        .build()
    )


def awaiting_payment() -> dict[str, Any]:
    return (
        ProcessBuilder("awaiting")
        .start()
        .receive_task("await", message="paid")
        .service_task("after", handler="noop")
        .end()
        .sequence("start", "await", "after", "end")
        .build()
    )


def external_then_step() -> dict[str, Any]:
    """An external task (``tests.workers.ext_worker`` does it), then a handler step."""
    return (
        ProcessBuilder("ext_then_step")
        .start()
        .service_task("reserve", topic="reserve")
        .service_task("after", handler="noop")
        .end()
        .sequence("start", "reserve", "after", "end")
        .build()
    )


def saga_abc(
    key: str = "saga_abc",
    *,
    undo: str = "undo",
    timeout: str | None = None,
    undo_retry: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A -> B -> C under a global saga, each step with a compensation; C always fails, so B
    then A are compensated and the instance ends TERMINATED.

    A compensation task takes its lock timeout from the node it compensates (``timeout``).
    """
    compensation: dict[str, Any] = {"handler": undo}
    if undo_retry is not None:
        compensation["retry"] = undo_retry
    b = ProcessBuilder(key, saga="global").start()
    for step, handler in (("a", "noop"), ("b", "noop"), ("c", "boom")):
        b._node(step, "serviceTask", handler=handler, timeout=timeout, compensation=compensation)
    return b.end().sequence("start", "a", "b", "c", "end").build()


def random_saga(seed: int) -> dict[str, Any]:
    """A global saga over a random mix of steps and parallel branches (``noop`` handlers,
    most with an ``undo`` compensation) that fails at one random step (``boom``)."""

    def step(name: str, undoable: bool) -> dict[str, Any]:
        undo = {"handler": "undo", "retry": {"max_attempts": 3, "backoff": "PT0S"}}
        return {
            "handler": "noop",
            "timeout": "PT3S",
            **({"compensation": undo} if undoable else {}),
        }

    doc, failing = shared.random_saga(seed, f"rnd_saga_{seed}", step)
    for node in doc["nodes"]:
        if node["id"] == failing:
            node["handler"] = "boom"
    return doc


def transaction_cancelled(key: str = "tx_cancel") -> dict[str, Any]:
    """start -> tx [a -> b -> cancel end] (cancel boundary) -> after -> end: a and b (``noop``,
    each undone by ``undo``) are compensated, b then a, then ``after`` runs."""
    body = ProcessBuilder("body").start("t_start")
    for step in ("a", "b"):
        body._node(step, "serviceTask", handler="noop", compensation={"handler": "undo"})
    body.cancel_end("t_cancel").sequence("t_start", "a", "b", "t_cancel")
    b = ProcessBuilder(key).start().sub_process("tx", body, transaction=True)
    b.cancel_boundary("on_cancel", attached_to="tx").service_task("after", handler="noop")
    b.end().end("never")
    return b.sequence("start", "tx", "never").sequence("on_cancel", "after", "end").build()


# --- the continuation tests: lock timeouts short enough for a killed worker's task --------

#: A task a killed worker held is offered again once its lock expires.
CONTINUED_TIMEOUT = "PT3S"
CONTINUED_RETRY: dict[str, Any] = {"max_attempts": 2, "backoff": "PT0S"}


def continued_line(
    key: str, count: int, handler_of: dict[str, str] | None = None
) -> dict[str, Any]:
    """``count`` service tasks ``s1`` .. ``s<count>`` in sequence (``noop`` unless named)."""
    b = ProcessBuilder(key).start()
    names = [f"s{i}" for i in range(1, count + 1)]
    for name in names:
        handler = (handler_of or {}).get(name, "noop")
        b.service_task(name, handler=handler, timeout=CONTINUED_TIMEOUT, retry=CONTINUED_RETRY)
    return b.end().sequence("start", *names, "end").build()


def continued_wait() -> dict[str, Any]:
    """Two service tasks, a receive task waiting for ``go``, two more."""
    b = ProcessBuilder("waits").start()
    for name in ("a1", "a2"):
        b.service_task(name, handler="noop", timeout=CONTINUED_TIMEOUT, retry=CONTINUED_RETRY)
    b.receive_task("wait", message="go")
    for name in ("b1", "b2"):
        b.service_task(name, handler="noop", timeout=CONTINUED_TIMEOUT, retry=CONTINUED_RETRY)
    return b.end().sequence("start", "a1", "a2", "wait", "b1", "b2", "end").build()


#: The service tasks of ``continued_fork``.
FORKED_TASKS = ["a1", "a2", "a3", "b1", "b2", "b3", "after"]


def continued_fork() -> dict[str, Any]:
    """A fork into branches a1-a3 and b1-b3, a join, then ``after``."""
    b = ProcessBuilder("forked").start().parallel_gateway("fork").parallel_gateway("join")
    for branch in ("a", "b"):
        names = [f"{branch}{i}" for i in (1, 2, 3)]
        for name in names:
            b.service_task(name, handler="noop", timeout=CONTINUED_TIMEOUT, retry=CONTINUED_RETRY)
        b.flow("fork", names[0]).sequence(*names, "join")
    b.service_task("after", handler="noop", timeout=CONTINUED_TIMEOUT, retry=CONTINUED_RETRY)
    return b.end().sequence("start", "fork").sequence("join", "after", "end").build()
