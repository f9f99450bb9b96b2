"""``tasks``, ``claim``, ``unclaim``, ``complete``, ``correlate`` and the wait states in ``show``.

Each test runs on SQLite and on a fresh PostgreSQL database: the candidate-group filter is
written differently for each.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from bpm import HandlerContext, handler
from bpm.cli import runtime
from bpm.definitions import ProcessBuilder
from bpm.dispatch import RUN_HANDLER, Dispatcher, Job
from bpm.handlers import registry
from tests.cli.conftest import Bpm
from tests.conftest import create_database, drop_database
from tests.helpers.redis_db import redis_url

UNKNOWN_ID = "3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77"
RECORD = "cli_test_record_review"


def _record(ctx: HandlerContext) -> dict[str, Any]:
    return {"recorded": ctx.variables.get("verdict")}


if RECORD not in registry:
    handler(RECORD)(_record)

APPROVAL = (
    ProcessBuilder("approval")
    .start("s")
    .user_task("review", candidate_groups=["ops"])
    .receive_task("await", message="paid")
    .end("e")
    .sequence("s", "review", "await", "e")
    .build()
)
DIRECT = (
    ProcessBuilder("direct")
    .start("s")
    .receive_task("await", message="paid")
    .end("e")
    .sequence("s", "await", "e")
    .build()
)
HANDOFF = (
    ProcessBuilder("handoff")
    .start("s")
    .user_task("review")
    .service_task("record", handler=RECORD)
    .end("e")
    .sequence("s", "review", "record", "e")
    .build()
)
PAUSING = (
    ProcessBuilder("pausing")
    .start("s")
    .timer("pause", duration="PT1H")
    .end("e")
    .sequence("s", "pause", "e")
    .build()
)


def _dict(value: object) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


def _list(value: object) -> list[dict[str, Any]]:
    assert isinstance(value, list)
    return value


@pytest.fixture(params=["sqlite", "postgres"])
def cli(
    request: pytest.FixtureRequest, bpm: Bpm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Bpm]:
    """``bpm`` on the test's database, with the processes above deployed from JSON files."""
    name = f"bpm_cli_wait_{uuid4().hex[:10]}"
    if request.param == "postgres":
        monkeypatch.setenv("BPM_DATABASE_URL", create_database(name))
        bpm.ok("db", "upgrade")
    try:
        for doc in (APPROVAL, DIRECT, HANDOFF, PAUSING):
            path = tmp_path / f"{doc['key']}.json"
            path.write_text(json.dumps(doc))
            bpm.ok("deploy", str(path))
        yield bpm
    finally:
        if request.param == "postgres":
            drop_database(name)


def start(cli: Bpm, key: str, business_key: str) -> str:
    doc = _dict(cli.json("start", key, "--business-key", business_key))
    assert doc["state"] == "RUNNING"
    return str(doc["id"])


def review_task(cli: Bpm, instance_id: str) -> str:
    [task] = _list(cli.json("tasks", "--instance", instance_id))
    return str(task["id"])


def test_tasks__lists_open_user_tasks_and_filters_by_group_assignee_instance(cli: Bpm) -> None:
    first = start(cli, "approval", "BK-1")
    second = start(cli, "approval", "BK-2")
    listed = _list(cli.json("tasks"))
    assert [t["instance_id"] for t in listed] == [first, second]  # oldest first
    assert all(
        t["node_id"] == "review"
        and t["state"] == "READY"
        and t["assignee"] is None
        and t["candidate_groups"] == ["ops"]
        for t in listed
    )
    assert {
        "id",
        "instance_id",
        "node_id",
        "state",
        "assignee",
        "candidate_groups",
        "created_at",
    } <= set(listed[0])
    assert len(_list(cli.json("tasks", "--group", "ops"))) == 2
    assert cli.json("tasks", "--group", "sales") == []
    assert [t["instance_id"] for t in _list(cli.json("tasks", "--instance", second))] == [second]
    cli.ok("claim", str(listed[1]["id"]), "alice")
    by_alice = _list(cli.json("tasks", "--assignee", "alice"))
    assert [t["id"] for t in by_alice] == [listed[1]["id"]]
    out = cli.ok("tasks", "--group", "ops").stdout
    assert out.splitlines()[0].split()[:4] == ["id", "instance", "node", "assignee"]
    assert "alice" in out and first in out
    assert "(no open user tasks)" in cli.ok("tasks", "--group", "sales").stdout


def test_claim__by_a_second_user_is_refused_naming_the_claimer(cli: Bpm) -> None:
    task = review_task(cli, start(cli, "approval", "BK-1"))
    assert "claimed by alice" in cli.ok("claim", task, "alice").stdout
    cli.ok("claim", task, "alice")  # claiming again is harmless
    line = cli.error("claim", task, "bob")
    assert "'alice'" in line and "'bob'" in line
    assert [t["assignee"] for t in _list(cli.json("tasks"))] == ["alice"]
    assert "unclaimed" in cli.ok("unclaim", task).stdout
    cli.ok("claim", task, "bob")
    assert [t["assignee"] for t in _list(cli.json("tasks"))] == ["bob"]
    assert "no user task" in cli.error("claim", UNKNOWN_ID, "bob")
    assert "a user task id" in cli.error("unclaim", "not-a-uuid")


def test_complete_then_correlate__the_instance_completes(cli: Bpm) -> None:
    instance = start(cli, "approval", "BK-1")
    task = review_task(cli, instance)
    cli.ok("claim", task, "alice")
    assert "'alice'" in cli.error("complete", task, "--user", "bob")
    done = _dict(
        cli.json(
            "complete",
            task,
            "--user",
            "alice",
            "--vars",
            '{"note": "x"}',
            "--var",
            "approved=true",
            "--var",
            "note=looks fine",
        )
    )
    assert done == {"task_id": task, "instance_id": instance, "state": "RUNNING"}
    assert cli.json("tasks") == []
    shown = _dict(cli.json("show", instance))
    assert shown["variables"] == {"approved": True, "note": "looks fine"}
    assert [(t["node_id"], t["state"], t["wait_kind"]) for t in shown["tokens"]] == [
        ("await", "WAITING", "MESSAGE")
    ]
    assert "is DONE" in cli.error("complete", task)

    out = cli.ok("correlate", "paid", "--business-key", "BK-1", "--var", "amount=12.5").stdout
    assert f"of instance {instance}" in out and "state: COMPLETED" in out
    shown = _dict(cli.json("show", instance))
    assert shown["state"] == "COMPLETED" and shown["variables"]["amount"] == 12.5


def test_complete__human_output_names_the_instance_and_its_state(cli: Bpm) -> None:
    instance = start(cli, "approval", "BK-1")
    task = review_task(cli, instance)
    out = cli.ok("complete", task).stdout
    assert out.splitlines() == [
        f"completed user task {task} of instance {instance}",
        "state: RUNNING",
    ]
    assert "no user task" in cli.error("complete", UNKNOWN_ID)


def test_correlate__no_match_exits_non_zero_and_changes_nothing(cli: Bpm) -> None:
    instance = start(cli, "approval", "BK-1")  # its token waits at the user task, not for paid
    before = (cli.json("show", instance), cli.json("trace", instance))
    for where in (
        ("--business-key", "BK-1"),
        ("--business-key", "nobody"),
        ("--instance", instance),
        ("--instance", UNKNOWN_ID),
    ):
        line = cli.error("correlate", "paid", *where, "--var", "amount=1")
        assert "waits for message 'paid'" in line
    assert "waits for message 'shipped'" in cli.error(
        "correlate", "shipped", "--instance", instance
    )
    assert (cli.json("show", instance), cli.json("trace", instance)) == before


def test_correlate__takes_at_most_one_of_business_key_and_instance(cli: Bpm) -> None:
    instance = start(cli, "direct", "BK-1")
    result = cli("correlate", "paid", "--business-key", "BK-1", "--instance", instance)
    assert result.exit_code == 2
    assert "--business-key" in result.stderr and "--instance" in result.stderr
    # With neither, it goes to whichever instance waits for it: none waits for "refund".
    assert "no process starts with message 'refund'" in cli.error("correlate", "refund")
    assert _dict(cli.json("show", instance))["state"] == "RUNNING"


def test_correlate__several_waiting_need_all(cli: Bpm) -> None:
    ids = {start(cli, "direct", "SHARED"), start(cli, "approval", "SHARED")}
    for task in _list(cli.json("tasks")):
        cli.ok("complete", str(task["id"]))
    line = cli.error("correlate", "paid", "--business-key", "SHARED")
    assert "2 tokens" in line
    assert {i["state"] for i in _list(cli.json("instances"))} == {"RUNNING"}
    woken = _dict(cli.json("correlate", "paid", "--business-key", "SHARED", "--all"))
    assert woken["message"] == "paid"
    assert {w["instance_id"] for w in woken["woken"]} == ids
    assert {w["state"] for w in woken["woken"]} == {"COMPLETED"}


def test_correlate__by_instance_id(cli: Bpm) -> None:
    instance = start(cli, "direct", "BK-1")
    out = cli.ok("correlate", "paid", "--instance", instance).stdout
    assert "message 'paid' woke token" in out and "state: COMPLETED" in out


def test_show__lists_timers_and_user_tasks(cli: Bpm) -> None:
    paused = start(cli, "pausing", "BK-T")
    [timer] = _dict(cli.json("show", paused))["timers"]
    assert timer["node_id"] == "pause" and timer["state"] == "SCHEDULED"
    out = cli.ok("show", paused).stdout
    timers = out.split("\ntimers\n")[1].split("\n\n")[0].splitlines()
    assert timers[0].split() == ["node", "fire", "at", "state", "token"]
    assert timers[1].split()[0] == "pause" and "SCHEDULED" in timers[1]
    assert timer["fire_at"].replace("T", " ")[:16] in timers[1]

    waiting = start(cli, "approval", "BK-U")
    cli.ok("claim", review_task(cli, waiting), "alice")
    out = cli.ok("show", waiting).stdout
    users = out.split("\nuser tasks\n")[1].split("\n\n")[0].splitlines()
    assert users[1].split()[1:] == ["review", "READY", "alice", "ops", "-", "50", "-", "-"]
    assert "\ntimers\n(none)" in out


class Recording:
    """Stands in for the Celery dispatcher: keeps the jobs a broker-mode command sends."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def dispatch(self, jobs: Sequence[Job]) -> None:
        self.jobs.extend(jobs)


def test_complete__runs_the_handler_that_follows_in_embedded_mode(cli: Bpm) -> None:
    instance = start(cli, "handoff", "BK-1")
    done = _dict(cli.json("complete", review_task(cli, instance), "--var", "verdict=ok"))
    assert done["state"] == "COMPLETED"
    assert _dict(cli.json("show", instance))["variables"] == {"verdict": "ok", "recorded": "ok"}


def test_broker_mode__complete_sends_the_work_to_the_workers(
    cli: Bpm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing runs the job here: the instance stays RUNNING with its handler task READY."""
    instance = start(cli, "handoff", "BK-1")
    task = review_task(cli, instance)
    sent = Recording()

    def recording() -> Dispatcher:
        return sent

    monkeypatch.setattr(runtime, "broker_dispatcher", recording)
    monkeypatch.setenv("BPM_BROKER_URL", redis_url())
    done = _dict(cli.json("complete", task, "--var", "verdict=ok"))
    assert done == {"task_id": task, "instance_id": instance, "state": "RUNNING"}
    assert [job.name for job in sent.jobs] == [RUN_HANDLER]
    tasks = _dict(cli.json("show", instance))["tasks"]
    assert [(t["node_id"], t["state"]) for t in tasks] == [("review", "DONE"), ("record", "READY")]


def test_help__lists_the_wait_state_commands(bpm: Bpm) -> None:
    out = bpm.ok("--help").stdout
    for name in ("tasks", "claim", "unclaim", "complete", "correlate"):
        assert f"  {name} " in out
    assert "--business-key" in bpm.ok("correlate", "--help").stdout
