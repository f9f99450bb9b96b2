"""``bpm replay``: the rebuilt state, the check, and the summary over every instance."""

from __future__ import annotations

import sqlite3
from typing import Any

from tests.cli.conftest import Bpm
from tests.cli.conftest import start_order as _start_order


def start_order(bpm: Bpm) -> dict[str, str]:
    started = _start_order(bpm)
    return {"id": str(started["id"]), "state": str(started["state"])}


def test_replay_check__agrees_and_exit_0(bpm: Bpm, deployed: dict[str, Any]) -> None:
    started = start_order(bpm)
    out = bpm.ok("replay", started["id"], "--check").stdout
    assert "history and tables agree" in out
    document = bpm.json("replay", started["id"], "--check")
    assert document == {"instance_id": started["id"], "differences": []}


def test_replay_check__a_difference_exits_1_and_names_it(
    bpm: Bpm, db_url: str, deployed: dict[str, Any]
) -> None:
    started = start_order(bpm)
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        changed = conn.execute(
            "UPDATE process_instances SET state = 'CANCELLED' WHERE id IN (?, ?)",
            (started["id"], started["id"].replace("-", "")),
        ).rowcount
    assert changed == 1
    result = bpm("replay", started["id"], "--check")
    assert result.exit_code == 1, result.output
    assert "instance: history says" in result.stdout
    summary = bpm("replay", "--check", "--all")
    assert summary.exit_code == 1 and "1 with differences" in summary.stdout


def test_replay_as_of__the_first_event_is_a_just_started_instance(
    bpm: Bpm, deployed: dict[str, Any]
) -> None:
    started = start_order(bpm)
    trace = bpm.json("trace", started["id"])
    assert isinstance(trace, list)
    first = trace[0]["id"]
    state = bpm.json("replay", started["id"], "--as-of", str(first))
    assert isinstance(state, dict)
    assert state["instance"]["state"] == "RUNNING" and state["tasks"] == {}
    now = bpm.json("replay", started["id"])
    assert isinstance(now, dict) and now["instance"]["state"] == started["state"]
    assert "neither an event id" in bpm.error("replay", started["id"], "--as-of", "yesterday")
    assert "--all goes with --check" in bpm.error("replay", "--all")


SCOPED = """{
  "key": "scoped_review",
  "nodes": [
    {"id": "start", "type": "startEvent"},
    {"id": "review", "type": "userTask",
     "inputs": {"limit": "${amount * 2}", "policy": "strict"},
     "outputs": {"approved": "${decision == 'yes'}"}},
    {"id": "end", "type": "endEvent"}
  ],
  "flows": [
    {"id": "f1", "source": "start", "target": "review"},
    {"id": "f2", "source": "review", "target": "end"}
  ]
}"""


def test_show_trace_and_replay_carry_local_variables(bpm: Bpm, tmp_path: Any) -> None:
    path = tmp_path / "scoped.json"
    path.write_text(SCOPED)
    bpm.ok("deploy", str(path))
    started = bpm.json("start", "scoped_review", "--var", "amount=21")
    assert isinstance(started, dict)
    iid = str(started["id"])

    shown = bpm.json("show", iid)
    assert isinstance(shown, dict)
    [scope] = shown["local_variables"]
    assert (scope["node_id"], scope["variables"]) == ("review", {"limit": 42, "policy": "strict"})
    assert "local variables" in bpm.ok("show", iid).stdout
    trace = bpm.json("trace", iid)
    assert isinstance(trace, list)
    assert [e["type"] for e in trace if e["type"].startswith("Local")] == ["LocalVariablesSet"]
    assert "history and tables agree" in bpm.ok("replay", iid, "--check").stdout
    rebuilt = bpm.json("replay", iid)
    assert isinstance(rebuilt, dict)
    assert list(rebuilt["local_variables"].values()) == [{"limit": 42, "policy": "strict"}]
    assert "policy" in bpm.ok("replay", iid).stdout
