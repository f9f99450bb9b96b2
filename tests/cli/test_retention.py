"""``bpm cleanup``: counts, deletes, and refuses a bad BPM_HISTORY_TTL_DAYS (SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Bpm

TTL_ENV = "BPM_HISTORY_TTL_DAYS"


def doc(key: str, **extra: object) -> dict[str, object]:
    return {
        "key": key,
        **extra,
        "nodes": [{"id": "s", "type": "startEvent"}, {"id": "e", "type": "endEvent"}],
        "flows": [{"id": "f", "source": "s", "target": "e"}],
    }


def deploy_and_run(bpm: Bpm, tmp_path: Path, key: str, n: int, **extra: object) -> None:
    path = tmp_path / f"{key}.json"
    path.write_text(json.dumps(doc(key, **extra)))
    bpm.ok("deploy", str(path))
    for _ in range(n):
        bpm.ok("start", key, "--wait", "10")


@pytest.fixture
def no_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TTL_ENV, raising=False)


@pytest.mark.usefixtures("no_default")
def test_cleanup_deletes_the_instances_past_their_ttl(bpm: Bpm, tmp_path: Path) -> None:
    deploy_and_run(bpm, tmp_path, "short", 3, historyTimeToLive="PT0S")
    deploy_and_run(bpm, tmp_path, "kept", 2)  # no TTL, no default: kept

    dry = bpm.json("cleanup", "--dry-run")
    assert dry == {"dry_run": True, "instances": 3, "default_ttl_days": None, "rows": {}}
    assert len(bpm.json("instances")) == 5  # type: ignore[arg-type]
    assert "would delete 3 ended instances" in bpm.ok("cleanup", "--dry-run").stdout

    done = bpm.json("cleanup")
    assert isinstance(done, dict) and done["instances"] == 3 and not done["dry_run"]
    assert done["rows"]["process_instances"] == 3 and done["rows"]["token_events"] > 0
    left = bpm.json("instances")
    assert isinstance(left, list) and {i["key"] for i in left} == {"kept"}
    assert bpm.ok("cleanup").stdout.strip() == "deleted 0 ended instances past their time to live"


def test_the_default_ttl_applies_to_definitions_without_one(
    bpm: Bpm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deploy_and_run(bpm, tmp_path, "plain", 2)
    monkeypatch.setenv(TTL_ENV, "0")
    assert "deleted 2 ended instances" in bpm.ok("cleanup").stdout
    assert bpm.json("instances") == []


def test_a_bad_default_ttl_is_one_error_line(bpm: Bpm, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TTL_ENV, "forever")
    assert "BPM_HISTORY_TTL_DAYS must be a number of days" in bpm.error("cleanup")


@pytest.mark.usefixtures("no_default")
def test_a_bad_history_ttl_in_a_file_is_refused(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc("bad", historyTimeToLive="one month")))
    line = bpm.error("deploy", str(path))
    assert "process 'bad'" in line and "historyTimeToLive" in line
