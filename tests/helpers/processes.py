"""Definition documents the tests share; every handler they name is a no-op unless said."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from bpm.definitions import ProcessBuilder

Doc = dict[str, Any]


def single_task(
    key: str = "single",
    *,
    handler: str = "work",
    retry: dict[str, Any] | None = None,
    timeout: str | None = None,
) -> Doc:
    """start -> work (serviceTask) -> end"""
    return (
        ProcessBuilder(key)
        .start()
        .service_task("work", handler=handler, retry=retry, timeout=timeout)
        .end()
        .sequence("start", "work", "end")
        .build()
    )


def fork_one_join(key: str = "fork3", branches: int = 3) -> Doc:
    """start -> fork -> b0..bN (serviceTasks) -> join -> after (serviceTask) -> end"""
    b = (
        ProcessBuilder(key)
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "fork")
        .sequence("join", "after", "end")
    )
    for i in range(branches):
        b.service_task(f"b{i}", handler="branch").flow("fork", f"b{i}").flow(f"b{i}", "join")
    return b.build()


def fork_two_joins(key: str = "fork3_two_joins") -> Doc:
    """fork of three closed by two joins: join1 takes b0 & b1, join2 takes join1's path and b2.

    start -> fork -> {b0, b1} -> join1 -> mid -> join2 -> after -> end;  fork -> b2 -> join2
    """
    b = (
        ProcessBuilder(key)
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join1")
        .parallel_gateway("join2")
        .service_task("mid", handler="mid")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "fork")
        .sequence("join1", "mid", "join2", "after", "end")
    )
    for i in range(3):
        b.service_task(f"b{i}", handler="branch").flow("fork", f"b{i}")
    return b.flow("b0", "join1").flow("b1", "join1").flow("b2", "join2").build()


def fork_two_joins_direct(key: str = "fork3_direct") -> Doc:
    """As ``fork_two_joins`` with join1 flowing straight into join2 (no task between).

    start -> fork -> {b0, b1} -> join1 -> join2 -> after -> end;  fork -> b2 -> join2
    """
    b = (
        ProcessBuilder(key)
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join1")
        .parallel_gateway("join2")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "fork")
        .sequence("join1", "join2", "after", "end")
    )
    for i in range(3):
        b.service_task(f"b{i}", handler="branch").flow("fork", f"b{i}")
    return b.flow("b0", "join1").flow("b1", "join1").flow("b2", "join2").build()


def join_then_fork(key: str = "join_fork") -> Doc:
    """A gateway that joins two branches and forks two new ones.

    start -> fork -> {b0, b1} -> jf -> {c0, c1} -> join -> after -> end
    """
    b = (
        ProcessBuilder(key)
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("jf")
        .parallel_gateway("join")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "fork")
        .sequence("join", "after", "end")
    )
    for i in range(2):
        b.service_task(f"b{i}", handler="branch").sequence("fork", f"b{i}", "jf")
        b.service_task(f"c{i}", handler="mid").sequence("jf", f"c{i}", "join")
    return b.build()


def nested_fork(key: str = "nested_fork") -> Doc:
    """A fork inside a fork branch.

    start -> fork1 -> b0 -> join1;  fork1 -> fork2 -> {b1, b2} -> join2 -> mid -> join1;
    join1 -> after -> end
    """
    b = (
        ProcessBuilder(key)
        .start()
        .parallel_gateway("fork1")
        .parallel_gateway("fork2")
        .parallel_gateway("join2")
        .parallel_gateway("join1")
        .service_task("b0", handler="branch")
        .service_task("b1", handler="branch")
        .service_task("b2", handler="branch")
        .service_task("mid", handler="mid")
        .service_task("after", handler="after")
        .end()
    )
    b.sequence("start", "fork1").flow("fork1", "b0").flow("b0", "join1").flow("fork1", "fork2")
    b.flow("fork2", "b1").flow("fork2", "b2").flow("b1", "join2").flow("b2", "join2")
    return b.sequence("join2", "mid", "join1", "after", "end").build()


def exclusive(
    key: str = "route",
    *,
    default: bool = True,
    conditions: tuple[str, str] = ("amount > 100", "amount > 10"),
) -> Doc:
    """start -> gw -> big | medium | (default) small -> end; conditions in declared order."""
    b = (
        ProcessBuilder(key)
        .start()
        .exclusive_gateway("gw", default="to_small" if default else None)
        .task("big")
        .task("medium")
        .end()
        .sequence("start", "gw")
        .flow("gw", "big", condition=conditions[0], flow_id="to_big")
        .flow("gw", "medium", condition=conditions[1], flow_id="to_medium")
        .sequence("big", "end")
        .sequence("medium", "end")
    )
    if default:
        b.task("small").flow("gw", "small", flow_id="to_small").sequence("small", "end")
    return b.build()


def random_saga(
    seed: int, key: str, step: Callable[[str, bool], dict[str, Any]]
) -> tuple[Doc, str]:
    """A global saga over a random mix of steps and parallel branches, and the step chosen to
    fail. ``step(name, undoable)`` gives a service task's keys; about 80% are undoable (the
    caller adds their ``compensation``)."""
    rnd = random.Random(seed)
    b = ProcessBuilder(key, saga="global").start()
    steps: list[str] = []

    def add(name: str) -> str:
        b._node(name, "serviceTask", **step(name, rnd.random() < 0.8))
        steps.append(name)
        return name

    previous = "start"
    for i in range(rnd.randint(2, 4)):
        if rnd.random() < 0.5:
            fork, join = f"f{i}", f"j{i}"
            b.parallel_gateway(fork).parallel_gateway(join).flow(previous, fork)
            for branch in range(rnd.randint(2, 3)):
                b.sequence(
                    fork, *[add(f"s{i}_{branch}_{k}") for k in range(rnd.randint(1, 3))], join
                )
            previous = join
        else:
            name = add(f"s{i}")
            b.flow(previous, name)
            previous = name
    doc = b.end().flow(previous, "end").build()
    return doc, rnd.choice(steps)


def inclusive_fork_join(key: str = "inclusive3") -> Doc:
    """An inclusive split whose three flows all hold (no conditions) into three branches, and
    an inclusive join: it must fire once, after the last branch, however they race."""
    b = ProcessBuilder(key).start().inclusive_gateway("split").inclusive_gateway("join")
    for i in range(3):
        b.service_task(f"b{i}", handler="branch").flow("split", f"b{i}").flow(f"b{i}", "join")
    return (
        b.service_task("after", handler="after")
        .end()
        .sequence("start", "split")
        .sequence("join", "after", "end")
        .build()
    )
