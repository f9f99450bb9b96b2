"""``bpm.testing``: the kit users test their own processes with.

What matters is that moving the fake clock releases exactly the work that became due, through
the scans production runs, and never waits on real time; and that the pytest fixture gives
every test an empty database.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from sqlalchemy.engine import make_url

from bpm import HandlerContext
from bpm.definitions import ProcessBuilder
from bpm.testing import EPOCH, FakeClock, ProcessTestKit
from tests.conftest import CLONE_PREFIX, DEFAULT_TEST_URL, drop_database

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "test_reminder_process.py"

REMINDER = (
    ProcessBuilder("reminder")
    .start()
    .timer("wait", duration="PT24H")
    .service_task("remind", handler="remind")
    .end()
    .sequence("start", "wait", "remind", "end")
    .build()
)


@pytest.fixture
def kit(pg_url: str) -> Iterator[ProcessTestKit]:
    with ProcessTestKit(pg_url) as k:
        yield k


def engine_event_types(kit: ProcessTestKit, iid: Any) -> list[str]:
    return [e["type"] for e in kit.trace(iid) if e["kind"] == "engine"]


# --- the clock -----------------------------------------------------------------------------


def test_the_fake_clock_takes_timedelta_keywords_and_never_runs_backwards() -> None:
    clock = FakeClock()
    assert clock.peek() == EPOCH
    assert clock.advance(hours=24) == EPOCH + timedelta(days=1)
    assert clock.advance(timedelta(minutes=1), seconds=30) == EPOCH + timedelta(days=1, seconds=90)
    assert clock.now() == clock.peek() - timedelta(milliseconds=1)  # each reading ticks
    clock.move_to(EPOCH)  # backwards: ignored
    assert clock.peek() > EPOCH + timedelta(days=1)
    with pytest.raises(ValueError, match="forward"):
        clock.advance(hours=-1)
    with pytest.raises(ValueError, match="timezone-aware"):
        FakeClock(datetime(2024, 1, 1))  # naive: refused
    assert FakeClock(datetime(2030, 1, 1, tzinfo=UTC)).peek().year == 2030


# --- timers --------------------------------------------------------------------------------


def test_a_timer_fires_only_once_24_hours_have_passed(kit: ProcessTestKit) -> None:
    reminded: list[datetime] = []
    kit.handler("remind")(lambda ctx: reminded.append(kit.now))
    kit.deploy(REMINDER)
    started_at = kit.now
    iid = kit.start("reminder", business_key="r-1").id
    assert kit.state(iid) == "RUNNING"
    [timer] = kit.show(iid)["timers"]
    assert timer["state"] == "SCHEDULED"

    kit.run()
    kit.advance(hours=23, minutes=59)
    assert reminded == [] and kit.state(iid) == "RUNNING"

    kit.advance(minutes=1)
    assert len(reminded) == 1
    assert timedelta(hours=24) <= reminded[0] - started_at < timedelta(hours=24, seconds=1)
    assert kit.state(iid) == "COMPLETED"
    assert "TimerFired" in engine_event_types(kit, iid)
    kit.advance(days=30)
    assert len(reminded) == 1  # fired once


def test_a_timer_that_re_arms_fires_at_each_instant_it_comes_due(kit: ProcessTestKit) -> None:
    """advance(hours=24) is a day passing, not one scan at its end: a reminder every 8 hours
    fires three times, each on time."""
    seen: list[datetime] = []

    @kit.handler("remind")
    def remind(ctx: HandlerContext) -> dict[str, Any]:
        seen.append(kit.now)
        return {"count": int(ctx.variables.get("count", 0)) + 1}

    kit.deploy(
        ProcessBuilder("nag")
        .start()
        .timer("wait", duration="PT8H")
        .service_task("remind", handler="remind")
        .exclusive_gateway("again", default="stop")
        .end()
        .sequence("start", "wait", "remind", "again")
        .flow("again", "wait", condition="count < 3")
        .flow("again", "end", flow_id="stop")
        .build()
    )
    t0 = kit.now
    iid = kit.start("nag").id

    kit.advance(hours=24)

    assert [round((t - t0) / timedelta(hours=1), 3) for t in seen] == [8, 16, 24]
    assert kit.state(iid) == "COMPLETED"
    assert kit.now - t0 < timedelta(hours=24, seconds=1)


def test_a_boundary_timer_on_a_user_task_escalates_when_nobody_acts(kit: ProcessTestKit) -> None:
    escalated: list[str] = []
    kit.handler("escalate")(lambda ctx: escalated.append(str(ctx.business_key)))
    kit.deploy(
        ProcessBuilder("approval")
        .start()
        .user_task("approve")
        .timer_boundary("late", attached_to="approve", duration="PT48H")
        .service_task("escalate", handler="escalate")
        .end()
        .end("late_end")
        .sequence("start", "approve", "end")
        .sequence("late", "escalate", "late_end")
        .build()
    )
    done = kit.start("approval", business_key="on-time").id
    late = kit.start("approval", business_key="late").id

    [task] = kit.user_tasks(instance_id=done)
    kit.advance(hours=47)
    kit.complete_user_task(task["id"], {"approved": True})
    assert kit.state(done) == "COMPLETED" and kit.variables(done) == {"approved": True}

    kit.advance(hours=1)
    assert escalated == ["late"]
    assert kit.state(late) == "COMPLETED" and kit.user_tasks() == []


# --- retries -------------------------------------------------------------------------------


def test_a_handler_retry_waits_for_the_clock_not_for_real_time(kit: ProcessTestKit) -> None:
    attempts: list[int] = []

    @kit.handler("flaky")
    def flaky(ctx: HandlerContext) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise ConnectionError("service unavailable")

    kit.deploy(
        ProcessBuilder("retry")
        .start()
        .service_task("call", handler="flaky", retry={"max_attempts": 2, "backoff": "PT30S"})
        .end()
        .sequence("start", "call", "end")
        .build()
    )
    began = time.monotonic()
    iid = kit.start("retry").id
    kit.run()
    assert time.monotonic() - began < 5  # EmbeddedRuntime alone would sleep out the backoff
    assert attempts == [1] and kit.state(iid) == "RUNNING"

    kit.advance(seconds=29)
    assert attempts == [1]
    kit.advance(seconds=1)
    assert attempts == [1, 2] and kit.state(iid) == "COMPLETED"


def external_doc(**retry: Any) -> dict[str, Any]:
    return (
        ProcessBuilder("ship")
        .start()
        .service_task("ship", topic="shipping", retry=retry)
        .end()
        .sequence("start", "ship", "end")
        .build()
    )


def test_an_external_task_is_offered_again_once_its_retry_timeout_has_passed(
    kit: ProcessTestKit,
) -> None:
    kit.deploy(external_doc())
    iid = kit.start("ship").id
    [task] = kit.fetch_and_lock("shipping")
    kit.fail_external(task, "carrier API down", retries=2, retry_timeout=timedelta(minutes=5))
    assert kit.fetch_and_lock("shipping") == []

    kit.advance(minutes=4)
    assert kit.fetch_and_lock("shipping") == []
    kit.advance(minutes=1)
    [again] = kit.fetch_and_lock("shipping")
    assert again.id == task.id and again.attempt == 2

    kit.complete_external(again, {"tracking": "T-1"})
    assert kit.state(iid) == "COMPLETED" and kit.variables(iid) == {"tracking": "T-1"}


def test_an_expired_lock_is_found_by_the_scan_when_the_clock_passes_it(kit: ProcessTestKit) -> None:
    kit.deploy(external_doc(max_attempts=2))
    iid = kit.start("ship").id
    [task] = kit.fetch_and_lock("shipping", lock=timedelta(minutes=1))  # and never reports

    kit.advance(seconds=59)
    assert kit.fetch_and_lock("shipping") == []  # still locked
    kit.advance(seconds=1)  # the expired-lock scan counts the lost run as an attempt
    [again] = kit.fetch_and_lock("shipping", worker_id="another-worker")
    assert again.id == task.id and again.attempt == 2

    kit.fail_external(again, "still down")
    assert kit.state(iid) == "FAILED"
    [incident] = kit.show(iid)["incidents"]
    assert "still down" in incident["message"]


# --- messages ------------------------------------------------------------------------------


def test_a_correlated_message_runs_the_instance_on(kit: ProcessTestKit) -> None:
    kit.deploy(
        ProcessBuilder("pay")
        .start()
        .receive_task("wait", message="paid")
        .end()
        .sequence("start", "wait", "end")
        .build()
    )
    iid = kit.start("pay", business_key="order-7").id
    assert kit.state(iid) == "RUNNING"
    assert len(kit.correlate("paid", business_key="order-7", variables={"amount": 12})) == 1
    assert kit.state(iid) == "COMPLETED" and kit.variables(iid) == {"amount": 12}


# --- the pytest plugin, as a user runs it ----------------------------------------------------


ISOLATION = """
import pytest

from bpm.definitions import ProcessBuilder
from bpm.errors import UnknownProcess

DOC = (ProcessBuilder("leftover").start().user_task("t")
       .timer_boundary("late", attached_to="t", duration="PT1H")
       .service_task("boom", handler="boom").end().end("late_end")
       .sequence("start", "t", "end").sequence("late", "boom", "late_end").build())


def test_a_leaves_rows_behind(bpm_kit):
    bpm_kit.handler("boom")(lambda ctx: None)
    bpm_kit.deploy(DOC)
    bpm_kit.start("leftover", business_key="mine")
    assert len(bpm_kit.engine.find_instances()) == 1 and len(bpm_kit.user_tasks()) == 1


def test_b_starts_from_an_empty_database(bpm_kit):
    assert bpm_kit.engine.find_instances() == [] and bpm_kit.user_tasks() == []
    assert bpm_kit.handlers.names() == []
    bpm_kit.advance(hours=2)  # the leftover timer is gone: nothing fires, nothing fails
    assert bpm_kit.engine.incidents() == []
    with pytest.raises(UnknownProcess):
        bpm_kit.start("leftover")
"""


def test_the_documented_set_up_runs_the_example_and_isolates_tests(tmp_path: Path) -> None:
    """``pytest_plugins = ["bpm.testing"]`` in a user's conftest: the example module passes,
    the database is created on first use, and no test sees the rows of the one before."""
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)
    (tmp_path / "test_isolation.py").write_text(ISOLATION)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["bpm.testing"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    name = f"{CLONE_PREFIX}{os.getpid()}_{uuid4().hex[:8]}"  # dropped as an orphan if we die
    server = make_url(os.environ.get("BPM_TEST_DATABASE_URL", DEFAULT_TEST_URL))
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["BPM_TEST_DATABASE_URL"] = server.set(database=name).render_as_string(hide_password=False)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    finally:
        drop_database(name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout


def test_the_example_in_the_docs_is_the_example_that_runs() -> None:
    """docs/testing.md shows examples/test_reminder_process.py without its module docstring
    and comments; the test above runs the file, this keeps the page from drifting from it."""
    doc = (ROOT / "docs" / "testing.md").read_text()
    [shown] = [b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "INVOICE = (" in b]
    body = EXAMPLE.read_text().split("from __future__ import annotations\n\n", 1)[1]
    code = "".join(line for line in body.splitlines(keepends=True) if not line.startswith("# "))
    assert shown == code
