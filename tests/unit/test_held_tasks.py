"""The rows a fetch returned, kept for the complete of the worker that locked the task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from bpm.engine.core import held
from bpm.engine.core.held import HeldTasks
from bpm.store.rows import TaskRow, TokenRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def locked(
    owner: str, at: datetime, lock: timedelta = timedelta(minutes=1)
) -> tuple[TaskRow, TokenRow]:
    iid = uuid4()
    token = TokenRow(
        uuid4(), iid, "t", "WAITING", "FORWARD", None, None, False, None, "TASK", 1, at, at
    )
    task = TaskRow(
        uuid4(),
        token.id,
        iid,
        "t",
        "topic",
        None,
        "EXTERNAL",
        "LOCKED",
        0,
        1,
        None,
        owner,
        at + lock,
        None,
        None,
        0,
        1,
        at,
        at,
    )
    return task, token


def test_only_the_worker_that_locked_the_task_takes_its_rows() -> None:
    rows = HeldTasks()
    task, token = locked("w1", T0)
    rows.remember(task, token)
    assert rows.take(task.id, "intruder") is None
    assert rows.take(task.id, "w1") == (task, token)
    assert rows.take(task.id, "w1") is None  # one report per lock


def test_rows_whose_lock_ran_out_are_dropped_as_new_ones_come() -> None:
    rows = HeldTasks()
    old = locked("w1", T0)
    rows.remember(*old)
    young = locked("w1", T0 + timedelta(seconds=30))
    rows.remember(*young)
    assert rows.take(old[0].id, "w1") == old  # still locked when the young one came
    rows.remember(*old)
    rows.remember(*locked("w1", T0 + timedelta(minutes=5)))
    assert rows.take(old[0].id, "w1") is None
    assert rows.take(young[0].id, "w1") is None


def test_at_most_limit_rows_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(held, "LIMIT", 3)
    rows = HeldTasks()
    first = locked("w1", T0, lock=timedelta(hours=1))
    rows.remember(*first)
    for _ in range(3):
        rows.remember(*locked("w1", T0, lock=timedelta(hours=1)))
    assert rows.take(first[0].id, "w1") is None
