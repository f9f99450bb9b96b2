"""Conditional start events of a process (Camunda's ``evaluateConditions``): the variables a
caller gives start an instance at every conditional start event, of the latest version of
each process, whose condition holds; nothing listens between two calls."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.errors import InvalidOperation, NotFound
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness


def hot(key: str, condition: str) -> dict[str, Any]:
    return (
        ProcessBuilder(key)
        .trigger_start("start", condition=condition)
        .service_task("cool", handler="cool")
        .end()
        .sequence("start", "cool", "end")
        .build()
    )


@pytest.fixture
def cool(calls: Calls) -> Calls:
    calls.add("cool")
    return calls


def test_each_start_whose_condition_holds_starts_an_instance(
    rt: Harness, cool: Calls, pg_db: Database
) -> None:
    rt.deploy(hot("hot", "${temperature > 30}"))
    rt.deploy(hot("warm", "${temperature > 20}"))
    rt.deploy(ProcessBuilder("plain").start().end().sequence("start", "end").build())
    assert rt.engine.evaluate_conditions({"temperature": 10}) == []
    started = rt.engine.evaluate_conditions({"temperature": 25}, business_key="day-1")
    assert [s.key for s in started] == ["warm"] and started[0].business_key == "day-1"
    rt.drain()
    assert cool.count("cool") == 1
    assert rows.instance(pg_db, started[0].id).business_key == "day-1"
    assert rt.engine.show(started[0].id)["variables"] == {"temperature": 25}
    assert_finished_cleanly(pg_db, started[0].id)
    both = rt.engine.evaluate_conditions({"temperature": 35})
    assert sorted(s.key for s in both) == ["hot", "warm"]
    only = rt.engine.evaluate_conditions({"temperature": 35}, process_key="hot")
    assert [s.key for s in only] == ["hot"]


def test_nothing_to_evaluate_and_a_condition_that_cannot_be_are_refused(rt: Harness) -> None:
    rt.deploy(ProcessBuilder("plain").start().end().sequence("start", "end").build())
    with pytest.raises(NotFound, match="no conditional start event"):
        rt.engine.evaluate_conditions({"x": 1})
    rt.deploy(hot("hot", "${temperature > 30}"))
    with pytest.raises(InvalidOperation, match="'start' of 'hot'"):
        rt.engine.evaluate_conditions({"x": 1})  # temperature is not given


def test_a_plain_start_begins_at_a_lone_conditional_start(rt: Harness, cool: Calls) -> None:
    rt.deploy(hot("hot", "${temperature > 30}"))
    iid = rt.engine.start("hot", {"temperature": 0}).id
    rt.drain()
    assert cool.count("cool") == 1 and rt.engine.show(iid)["state"] == "COMPLETED"
