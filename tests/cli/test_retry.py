"""``bpm retry`` in embedded mode runs the retried handler in its own process: without the module
that registers it, it refuses, naming the handler, and changes nothing (issue 13).

The failed instance is made by an ``EmbeddedRuntime`` whose private registry has the handler,
on the same SQLite file, as a ``bpm start`` with ``--import`` would; the ``bpm`` commands then
run with the global registry, where no module registered it yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from bpm import HandlerContext
from bpm.cli import runtime
from bpm.definitions import ProcessBuilder
from bpm.dispatch import RUN_HANDLER, Dispatcher, Job
from bpm.embedded import EmbeddedRuntime
from bpm.handlers import HandlerRegistry
from tests.cli.conftest import Bpm
from tests.helpers.redis_db import redis_url


class Recording:
    """Stands in for the Celery dispatcher: keeps the jobs a broker-mode command sends."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def dispatch(self, jobs: Sequence[Job]) -> None:
        self.jobs.extend(jobs)


def _dict(value: object) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


@pytest.fixture
def handler_name() -> str:
    """A name no module registers yet: the global registry outlives each test."""
    return f"cli_retry_reserve_{uuid4().hex[:8]}"


@pytest.fixture
def failed(db_url: str, handler_name: str) -> dict[str, Any]:
    """An instance whose only task FAILED (after its one attempt) and has an open incident."""
    doc = (
        ProcessBuilder("reserve")
        .start()
        .service_task("reserve", handler=handler_name, retry={"max_attempts": 1})
        .end()
        .sequence("start", "reserve", "end")
        .build()
    )
    handlers = HandlerRegistry()

    def out_of_stock(ctx: HandlerContext) -> None:
        raise ConnectionError("the warehouse does not answer")

    handlers.register(handler_name, out_of_stock)
    rt = EmbeddedRuntime(db_url, handlers=handlers)
    try:
        rt.engine.deploy(doc)
        started = rt.engine.start("reserve")
        assert rt.wait_for(started.id, timeout=10) == "FAILED"
        shown = rt.engine.show(started.id)
    finally:
        rt.close()
    return shown


def _module(tmp_path: Path, handler_name: str) -> str:
    """A handler module in the working directory (importable, as for ``bpm start``)."""
    name = f"stock_{handler_name}"
    (tmp_path / f"{name}.py").write_text(
        "from bpm import handler\n\n\n"
        f"@handler({handler_name!r})\n"
        "def reserve(ctx):\n"
        "    return {'reserved': True}\n"
    )
    return name


def test_retry__without_the_handler_module_is_refused_and_changes_nothing(
    bpm: Bpm, failed: dict[str, Any], handler_name: str
) -> None:
    [token] = [t for t in failed["tokens"] if t["state"] == "FAILED"]
    [task] = failed["tasks"]
    for given in (token["id"], task["id"]):  # by the token's id, and by its task's
        line = bpm.error("retry", given)
        assert f"runs handler {handler_name!r}" in line
        assert "BPM_IMPORTS" in line and "--import MODULE" in line
        assert "no handler module is imported" in line and "nothing was retried" in line

    after = _dict(bpm.json("show", failed["id"]))
    assert after["state"] == "FAILED"
    assert after["tokens"] == failed["tokens"]
    assert after["tasks"] == failed["tasks"]  # no attempt used, the first error kept
    assert after["incidents"] == failed["incidents"]
    assert [i["state"] for i in after["incidents"]] == ["OPEN"]
    events = bpm.json("trace", failed["id"])
    assert isinstance(events, list)
    assert not [e for e in events if e["type"] in ("RETRIED", "OperatorRetry")]


def test_retry__names_the_modules_that_were_imported_without_the_handler(
    bpm: Bpm, failed: dict[str, Any], handler_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    [token] = [t for t in failed["tokens"] if t["state"] == "FAILED"]
    monkeypatch.setenv("BPM_IMPORTS", "bpm.demo.order_handlers")
    line = bpm.error("retry", token["id"])
    assert "the modules imported (bpm.demo.order_handlers) do not register it" in line
    assert handler_name in line


def test_retry__with_the_handler_module_imported_runs_it(
    bpm: Bpm, failed: dict[str, Any], handler_name: str, tmp_path: Path
) -> None:
    [token] = [t for t in failed["tokens"] if t["state"] == "FAILED"]
    module = _module(tmp_path, handler_name)
    retried = _dict(bpm.json("retry", token["id"], "--import", module))
    assert retried == {"token_id": token["id"], "instance_id": failed["id"], "state": "COMPLETED"}
    shown = _dict(bpm.json("show", failed["id"]))
    assert shown["variables"] == {"reserved": True}
    assert [t["attempts"] for t in shown["tasks"]] == [2]


def test_retry__in_broker_mode_leaves_the_handler_to_the_workers(
    bpm: Bpm, failed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Celery workers import the handler modules, not ``bpm``: nothing is checked here,
    the retry is made and its job sent."""
    [token] = [t for t in failed["tokens"] if t["state"] == "FAILED"]
    sent = Recording()

    def recording() -> Dispatcher:
        return sent

    monkeypatch.setattr(runtime, "broker_dispatcher", recording)
    monkeypatch.setenv("BPM_BROKER_URL", redis_url())
    retried = _dict(bpm.json("retry", token["id"]))
    assert retried["token_id"] == token["id"] and retried["state"] == "RUNNING"
    assert [job.name for job in sent.jobs] == [RUN_HANDLER]
    [task] = _dict(bpm.json("show", failed["id"]))["tasks"]
    assert task["state"] == "READY"


def test_retry__of_a_token_that_is_not_failed_keeps_the_engine_message(
    bpm: Bpm, db_url: str, handler_name: str
) -> None:
    """The handler check speaks only for a retry that would run the handler: a token that
    cannot be retried anyway gets the engine's refusal, whatever is imported."""
    handlers = HandlerRegistry()
    handlers.register(handler_name, lambda ctx: None)
    rt = EmbeddedRuntime(db_url, handlers=handlers)
    try:
        rt.engine.deploy(
            ProcessBuilder("works")
            .start()
            .service_task("do", handler=handler_name)
            .end()
            .sequence("start", "do", "end")
            .build()
        )
        started = rt.engine.start("works")
        assert rt.wait_for(started.id, timeout=10) == "COMPLETED"
        [task] = rt.engine.show(started.id)["tasks"]
    finally:
        rt.close()
    line = bpm.error("retry", task["token_id"])
    assert "only FAILED tokens" in line and handler_name not in line
