"""A fetch's instance filters on SQLite, where the tasks are locked one by one (PostgreSQL's
single statement is tested through the HTTP API in tests/server/test_fetch_filters.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bpm.embedded import EmbeddedRuntime
from bpm.engine.operations.external import TopicRequest
from bpm.store.task_filters import InstanceMatch
from tests.server.processes import deploy, start


def test_filters_pick_the_instances_they_name(tmp_path: Path) -> None:
    rt = EmbeddedRuntime(f"sqlite:///{tmp_path / 'bpm.db'}")
    try:
        deploy(rt, "fa", "t")
        deploy(rt, "fb", "t")
        ids = {
            "a1": start(rt, "fa", business_key="k1", colour="red"),
            "a2": start(rt, "fa", business_key="k2", colour="blue"),
            "b1": start(rt, "fb", business_key="k1", colour="red"),
        }
        names = {v: k for k, v in ids.items()}

        def fetch(match: InstanceMatch) -> set[str]:
            found = rt.engine.fetch_and_lock(
                "w", [TopicRequest("t", timedelta(seconds=60), None, match)], 10
            )
            for task in found:
                rt.engine.unlock(task.id)
            return {names[str(t.instance_id)] for t in found}

        assert fetch(InstanceMatch()) == {"a1", "a2", "b1"}
        assert fetch(InstanceMatch(business_key="k1")) == {"a1", "b1"}
        assert fetch(InstanceMatch(process_keys=("fb",))) == {"b1"}
        assert fetch(InstanceMatch(variables={"colour": "blue"})) == {"a2"}
        assert fetch(InstanceMatch(business_key="k1", variables={"colour": "blue"})) == set()
    finally:
        rt.close()
