"""Two transactions that each make a conditional boundary's condition true at once.

Each completes a user task of its own branch and sets a variable; both read the third
branch's activity at work with its interrupting conditional boundary, and both would fire it.
The interleaving is forced: the first waits after it found the boundary due until the second
has committed. Its interrupt then moves the activity's token from a version that is gone:
the flush conflicts, the completion is retried, and the boundary has fired once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.engine.semantics import condition_changes
from bpm.store import Database
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, EngineFactory


def three_branches() -> dict[str, Any]:
    return (
        ProcessBuilder("race")
        .start()
        .parallel_gateway("fork")
        .user_task("a")
        .user_task("b")
        .user_task("work")
        .conditional_boundary("flag", attached_to="work", condition="${a + b > 1}")
        .service_task("flagged", handler="flagged")
        .end("flag_end")
        .end("a_end")
        .end("b_end")
        .end("work_end")
        .sequence("start", "fork", "a", "a_end")
        .sequence("fork", "b", "b_end")
        .sequence("fork", "work", "work_end")
        .sequence("flag", "flagged", "flag_end")
        .build()
    )


def test_two_completions_fire_an_interrupting_conditional_boundary_once(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls.add("flagged")
    rt = engine_factory()
    iid = rt.run(three_branches(), {"a": 1, "b": 0})
    tasks = {t["node_id"]: t["id"] for t in rt.engine.user_tasks(instance_id=iid)}
    found, go = threading.Event(), threading.Event()
    original = condition_changes._due
    paused = [False]
    runs: list[str] = []

    def due_then_wait(*args: Any) -> Iterator[Any]:
        due = list(original(*args))
        runs.append(threading.current_thread().name)
        if threading.current_thread().name == "first" and due and not paused[0]:
            paused[0] = True
            found.set()
            go.wait(timeout=10)  # the second may queue behind a lock of ours: go on then
        yield from due

    monkeypatch.setattr(condition_changes, "_due", due_then_wait)
    errors: list[BaseException] = []

    def complete(node: str, values: dict[str, Any]) -> None:
        try:
            rt.engine.complete_user_task(tasks[node], values)
        except BaseException as exc:  # reported below
            errors.append(exc)

    first = threading.Thread(target=complete, args=("a", {"a": 2}), name="first")
    first.start()
    assert found.wait(timeout=30), "the first completion never found the boundary due"
    second = threading.Thread(target=complete, args=("b", {"b": 2}), name="second")
    second.start()
    second.join(timeout=30)
    go.set()
    first.join(timeout=30)
    assert not errors, errors
    rt.drain()
    assert calls.count("flagged") == 1
    assert runs.count("first") >= 2, "the first completion was not retried after its conflict"
    assert rt.engine.user_tasks(instance_id=iid) == []
    assert_finished_cleanly(pg_db, iid)
    assert_history_consistent(pg_db, iid)
