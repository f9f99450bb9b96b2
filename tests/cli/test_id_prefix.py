"""Instance ids shortened to a unique start of them, as the demo and the tables print them
(issue 13): every command that takes an instance id resolves the prefix, on SQLite and on
PostgreSQL (a range on the primary key, which the two store differently)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime
from tests.cli.conftest import Bpm

#: Seventeen ids over sixteen hex digits: at least two share their first character.
INSTANCES = 17
WAITING = (
    ProcessBuilder("waiting")
    .start()
    .user_task("review")
    .receive_task("paid", message="paid")
    .end()
    .sequence("start", "review", "paid", "end")
    .build()
)
PAID = (
    ProcessBuilder("paid")
    .start()
    .receive_task("paid", message="paid")
    .end()
    .sequence("start", "paid", "end")
    .build()
)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "sqlite":
        return db_url
    pg: str = request.getfixturevalue("pg_url")
    monkeypatch.setenv("BPM_DATABASE_URL", pg)
    return pg


@pytest.fixture
def ids(url: str) -> Iterator[list[str]]:
    """Instances waiting at a user task, and one waiting for message 'paid' (the last id)."""
    rt = EmbeddedRuntime(url)
    try:
        rt.engine.deploy(WAITING)
        rt.engine.deploy(PAID)
        started = [str(rt.engine.start("waiting").id) for _ in range(INSTANCES)]
        started.append(str(rt.engine.start("paid").id))
        rt.run_until_idle(timeout=20)
    finally:
        rt.close()
    yield started


def unique_prefix(ids: list[str], of: str) -> str:
    """The shortest start of ``of`` that no other id shares (8 characters at the least)."""
    for length in range(8, 37):
        if not [i for i in ids if i != of and i.startswith(of[:length])]:
            return of[:length]
    raise AssertionError(f"{of} is not unique")


def _dict(value: object) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


def test_read_commands_take_the_eight_characters_the_tables_print(bpm: Bpm, ids: list[str]) -> None:
    whole = ids[0]
    short = unique_prefix(ids, whole)
    assert _dict(bpm.json("show", short))["id"] == whole
    assert bpm.ok("show", short).stdout == bpm.ok("show", whole).stdout
    assert bpm.json("trace", short) == bpm.json("trace", whole)
    assert bpm.ok("trace", short, "--diagram").stdout == bpm.ok("trace", whole, "--diagram").stdout
    assert bpm.json("replay", short) == bpm.json("replay", whole)
    assert (
        f"instance {whole}: history and tables agree" in bpm.ok("replay", short, "--check").stdout
    )
    history = bpm.json("history", "--instance", short)
    assert isinstance(history, list) and history
    assert {e["instance_id"] for e in history} == {whole}
    tasks = bpm.json("tasks", "--instance", short)
    assert isinstance(tasks, list) and [t["instance_id"] for t in tasks] == [whole]


def test_a_prefix_with_dashes_and_capitals_is_a_prefix_too(bpm: Bpm, ids: list[str]) -> None:
    whole = ids[1]
    assert _dict(bpm.json("show", whole[:13].upper()))["id"] == whole  # 8a9e554a-a3d0


def test_cancel_and_correlate_act_on_the_instance_the_prefix_names(
    bpm: Bpm, ids: list[str]
) -> None:
    cancelled, paid = ids[2], ids[-1]
    assert (
        f"cancelled instance {cancelled}" in bpm.ok("cancel", unique_prefix(ids, cancelled)).stdout
    )
    assert _dict(bpm.json("show", cancelled))["state"] == "CANCELLED"
    woken = _dict(bpm.json("correlate", "paid", "--instance", unique_prefix(ids, paid)))
    assert [(w["instance_id"], w["state"]) for w in woken["woken"]] == [(paid, "COMPLETED")]


def test_an_ambiguous_prefix_is_refused_naming_how_many_match(bpm: Bpm, ids: list[str]) -> None:
    first, count = Counter(i[0] for i in ids).most_common(1)[0]
    assert count >= 2
    for args in (
        ["show", first],
        ["trace", first],
        ["cancel", first],
        ["tasks", "--instance", first],
    ):
        line = bpm.error(*args)
        assert f"{count} instances have an id that starts with {first!r}" in line
        assert "give more of the id" in line
    states = {i["id"]: i["state"] for i in json.loads(bpm.ok("instances", "--json").stdout)}
    assert states == {i: "RUNNING" for i in ids}  # nothing was cancelled


def test_an_unknown_prefix_is_refused_naming_it(bpm: Bpm, ids: list[str]) -> None:
    unknown = next(
        p for p in (f"{n:08x}" for n in range(1000)) if not any(i.startswith(p) for i in ids)
    )
    for command in ("show", "trace", "cancel", "replay"):
        assert f"no instance id starts with {unknown!r}" in bpm.error(command, unknown)


@pytest.mark.parametrize("text", ["8a9e-554a", "8a9e554aa3d0", "xyz", "8a9e554a--", ""])
def test_what_is_not_the_start_of_an_id_is_a_usage_error(bpm: Bpm, db_url: str, text: str) -> None:
    result = bpm("show", text)
    assert result.exit_code == 2
    assert "is not an instance id" in result.stderr and "unique start of one" in result.stderr


def test_the_demo_ids_work_as_printed(
    bpm: Bpm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The demo's summary table shows 8 characters of each id: each one shows its instance."""
    out = bpm.ok("demo").stdout
    database = next(
        line.split("=", 1)[1] for line in out.splitlines() if "export BPM_DATABASE_URL=" in line
    )
    monkeypatch.setenv("BPM_DATABASE_URL", database)
    table = out[: out.index("\n\n", out.index("business key"))].splitlines()
    header = next(n for n, line in enumerate(table) if line.startswith("instance"))
    rows = table[header + 1 :]
    assert len(rows) == 5  # the five fulfilment orders
    for row in rows:
        short, business_key = row.split()[:2]
        assert len(short) == 8
        assert _dict(bpm.json("show", short))["business_key"] == business_key
