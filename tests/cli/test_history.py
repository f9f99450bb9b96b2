"""``bpm history``: events across instances, filtered."""

from __future__ import annotations

from typing import Any

from tests.cli.conftest import Bpm, start_order


def test_history__by_business_key_and_type(bpm: Bpm, deployed: dict[str, Any]) -> None:
    first = start_order(bpm, "--business-key", "B-1")
    start_order(bpm, "--business-key", "B-2")
    events = bpm.json("history", "--business-key", "B-1")
    assert isinstance(events, list) and events
    assert {e["instance_id"] for e in events} == {first["id"]}
    started = bpm.json("history", "--type", "InstanceStarted")
    assert isinstance(started, list) and len(started) == 2
    assert "InstanceStarted" in bpm.ok("history", "--key", "order_fulfilment").stdout
    assert "not an ISO 8601 time" in bpm.error("history", "--since", "last week")
