"""``bpm signal NAME``: a broadcast to every instance waiting for it, with ``--var``
variables; ``--key`` throws once; ``show`` lists the signal a token waits for. Embedded
(SQLite) mode runs the deliveries in the command."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from tests.cli.conftest import Bpm

WAITING = (
    ProcessBuilder("waiting")
    .start("s")
    .signal_event("wait", signal="go now")
    .end("e")
    .sequence("s", "wait", "e")
    .build()
)


@pytest.fixture
def cli(bpm: Bpm, tmp_path: Path) -> Iterator[Bpm]:
    path = tmp_path / "waiting.json"
    path.write_text(json.dumps(WAITING))
    bpm.ok("deploy", str(path))
    yield bpm


def _dict(value: object) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


def test_signal__reaches_every_waiting_instance_once(cli: Bpm) -> None:
    ids = [str(_dict(cli.json("start", "waiting"))["id"]) for _ in range(2)]
    shown = _dict(cli.json("show", ids[0]))
    assert [(t["node_id"], t["wait_kind"]) for t in shown["tokens"]] == [("wait", "SIGNAL")]
    assert {"event": "wait", "signal": "go now"}.items() <= shown["subscriptions"][0].items()
    out = cli.ok("signal", "go now", "--var", "n=3", "--key", "once").stdout
    assert "signal 'go now' thrown to 2 recipient(s)" in out
    for iid in ids:
        shown = _dict(cli.json("show", iid))
        assert shown["state"] == "COMPLETED" and shown["variables"] == {"n": 3}
    again = _dict(cli.json("signal", "go now", "--key", "once"))
    assert again["recipients"] == 0
    assert _dict(cli.json("signal", "nobody listens"))["recipients"] == 0
