"""Finding instances and history by definition, business key, state, time and incidents."""

from __future__ import annotations

from datetime import timedelta

from bpm.definitions import ProcessBuilder
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import Calls, Harness, failing


def doc(key: str, handler: str = "work") -> dict[str, object]:
    return (
        ProcessBuilder(key)
        .start()
        .service_task("work", handler=handler)
        .end()
        .sequence("start", "work", "end")
        .build()
    )


def test_instances_by_key_version_business_key_state_time_and_incidents(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    calls.add("broken", failing(100))
    rt.deploy(doc("orders"))
    early = rt.engine.start("orders", business_key="o-1").id
    rt.drain()
    clock.advance(timedelta(days=1))
    middle = clock.peek()
    rt.deploy(doc("orders", handler="broken"))  # version 2 fails
    late = rt.engine.start("orders", business_key="o-2").id
    rt.drain()
    e = rt.engine

    def ids(**filters: object) -> set[str]:
        return {i["id"] for i in e.find_instances(**filters)}  # type: ignore[arg-type]

    assert ids(key="orders") == {str(early), str(late)}
    assert ids(key="orders", version=1) == {str(early)}
    assert ids(business_key="o-2") == {str(late)}
    assert ids(state="FAILED") == ids(with_open_incidents=True) == {str(late)}
    assert ids(since=middle) == {str(late)}  # the first one ended before
    assert ids(until=middle - timedelta(hours=1)) == {str(early)}
    assert ids(key="other") == set()


def test_history_across_instances_filtered_by_type_and_time(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    rt.deploy(doc("orders"))
    first = rt.engine.start("orders", business_key="o-1").id
    rt.drain()
    clock.advance(timedelta(hours=2))
    second = rt.engine.start("orders", business_key="o-2").id
    rt.drain()
    started = rt.engine.history(key="orders", types=["InstanceStarted"])
    assert [ev["instance_id"] for ev in started] == [str(first), str(second)]
    recent = rt.engine.history(since=clock.peek() - timedelta(hours=1))
    assert {ev["instance_id"] for ev in recent} == {str(second)}
    one = rt.engine.history(instance_id=first)
    assert one[0]["type"] == "InstanceStarted" and one[-1]["type"] == "InstanceCompleted"
    assert [ev["id"] for ev in one] == sorted(ev["id"] for ev in one)
