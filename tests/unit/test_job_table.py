"""The job table is the one place a job is defined: the Celery tasks, their routes and beat's
schedule are exactly its entries, every job the engine sends has one, and decoding a message
refuses what cannot be a job, naming the argument."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from celery import Celery

import bpm.dispatch
from bpm.dispatch import Job, JobName
from bpm.engine.core.tx import Tx
from bpm.engine.jobs.args import PoisonMessage, as_sent
from bpm.engine.jobs.spec import JobQueue
from bpm.engine.jobs.table import JOBS, RECOVERY_SCANS
from bpm_workers.config import MESSAGE_ONLY, SCAN_JOBS, Settings, celery_config
from bpm_workers.tasks import register

BPM = Path(__file__).resolve().parents[2] / "bpm"
SETTINGS = Settings("redis://127.0.0.1:6379/15", "t.", 60, 1.0, 1.0)

#: A message each job accepts.
VALID: dict[str, dict[str, Any]] = {
    JobName.ADVANCE_TOKEN: {"token_id": str(uuid4()), "expected_version": 3},
    JobName.RUN_HANDLER: {"task_id": str(uuid4())},
    JobName.RUN_COMPENSATION: {"token_id": str(uuid4()), "expected_version": 0},
    JobName.START_INSTANCE: {"process_key": "order", "variables": {"n": 1}, "business_key": "o-1"},
    JobName.CORRELATE_MESSAGE: {"message": "paid", "instance_id": str(uuid4()), "all": True},
    JobName.THROW_SIGNAL: {"name": "alarm", "variables": {"n": 1}, "throw_key": "k-1"},
    JobName.DELIVER_SIGNAL: {"signal_id": str(uuid4())},
    JobName.SCAN_TIMERS: {},
    JobName.SCAN_LOCKS: {},
    JobName.SCAN_STALLED: {},
    JobName.CLEANUP_HISTORY: {},
}

#: For each decoder that can refuse, a value it refuses.
REFUSED = {
    "as_uuid": "not-a-uuid",
    "as_optional_uuid": "not-a-uuid",
    "as_version": -1,
    "as_str": "",
    "as_optional_str": 42,
    "as_flag": "false",
}


def app_with_tasks(settings: Settings = SETTINGS) -> Celery:
    app = Celery("table-test", set_as_current=False)
    app.conf.update(celery_config(settings))
    register(app, settings)
    return app


def bpm_tasks(app: Celery) -> set[str]:
    return {name for name in app.tasks if name.startswith("bpm.")}


# --- the Celery side is generated from the table ------------------------------------------


def test_every_job_name_has_an_entry_and_every_entry_a_name() -> None:
    assert set(JOBS) == set(JobName)
    assert all(spec.name == name for name, spec in JOBS.items())


def test_the_celery_app_registers_exactly_the_table_with_its_routes() -> None:
    worker_app = importlib.import_module("bpm_workers.app")  # ``bpm_workers.app`` is also the app
    for app, settings in ((app_with_tasks(), SETTINGS), (worker_app.app, worker_app.settings)):
        assert bpm_tasks(app) == set(JOBS)
        for name, spec in JOBS.items():
            route = app.amqp.router.route({}, name)
            assert route["queue"].name == f"{settings.queue_prefix}{spec.queue}", name


def test_the_tasks_answer_a_sender_only_for_jobs_that_say_so() -> None:
    quiet = app_with_tasks()
    answering = app_with_tasks(replace(SETTINGS, result_backend="redis://127.0.0.1:6379/15"))
    for name, spec in JOBS.items():
        assert quiet.tasks[name].ignore_result, name
        assert answering.tasks[name].ignore_result is (spec.refusal is None), name
        assert tuple(answering.tasks[name].throws) == (
            (spec.refusal,) if spec.refusal is not None else ()
        )
    assert {n for n, s in JOBS.items() if s.refusal is not None} == {
        JobName.START_INSTANCE,
        JobName.CORRELATE_MESSAGE,
    }


def test_routes_requests_and_scans_are_derived_from_the_queues() -> None:
    assert MESSAGE_ONLY == {n for n, s in JOBS.items() if s.queue is JobQueue.STARTS}
    assert MESSAGE_ONLY == {
        JobName.START_INSTANCE,
        JobName.CORRELATE_MESSAGE,
        JobName.THROW_SIGNAL,
    }
    assert SCAN_JOBS == {n for n, s in JOBS.items() if s.queue is JobQueue.SCANS}
    assert set(RECOVERY_SCANS) == {JobName.SCAN_TIMERS, JobName.SCAN_LOCKS, JobName.SCAN_STALLED}


def test_beat_sends_every_job_with_a_period_to_its_queue() -> None:
    from bpm_beat.schedule import beat_schedule

    schedule = beat_schedule(SETTINGS)
    assert set(schedule) == {n for n, s in JOBS.items() if s.every is not None}
    assert set(schedule) == {*RECOVERY_SCANS, JobName.CLEANUP_HISTORY}
    for name, entry in schedule.items():
        assert entry["task"] == name
        assert entry["options"]["queue"] == f"t.{JOBS[name].queue}"


def test_the_stalled_scan_groups_four_scans_in_its_log_line_order() -> None:
    names = [part.name for part in JOBS[JobName.SCAN_STALLED].scans]
    assert names == ["stalled_tokens", "ready_tasks", "waiting_parents", "unfinished_signals"]


# --- every job the engine sends is in the table -------------------------------------------


def _dispatched_names() -> Iterator[tuple[Path, str]]:
    """The name of every ``Job(...)`` built in bpm/, resolved through ``bpm.dispatch``."""
    for path in BPM.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Job"):
                continue
            first = node.args[0] if node.args else None
            if path.name == "table.py" and first is not None and ast.unparse(first) == "job.name":
                continue  # a job sent again under the name it came with
            if isinstance(first, ast.Name) and hasattr(bpm.dispatch, first.id):
                yield path, str(getattr(bpm.dispatch, first.id))
            elif (
                isinstance(first, ast.Attribute)
                and isinstance(first.value, ast.Name)
                and first.value.id == "JobName"
            ):
                yield path, str(JobName[first.attr])
            else:
                yield path, f"<not a job name: {ast.unparse(first) if first else 'nothing'}>"


def test_every_job_the_engine_builds_is_named_from_the_table() -> None:
    found = list(_dispatched_names())
    unknown = [(str(p.relative_to(BPM)), n) for p, n in found if n not in JOBS]
    assert not unknown, f"jobs built with a name the table does not have: {unknown}"
    where = {str(p.relative_to(BPM)) for p, _ in found}
    # The places that send jobs today (a new one is covered the same way).
    assert {
        "engine/core/tx.py",
        "engine/core/engine_core.py",
        "engine/semantics/sagas.py",
        "engine/operations/scans.py",
    } <= where
    assert {n for _, n in found} >= {
        JobName.ADVANCE_TOKEN,
        JobName.RUN_HANDLER,
        JobName.RUN_COMPENSATION,
    }


def test_a_transactions_follow_up_jobs_are_in_the_table() -> None:
    tx = Tx(conn=None, now=datetime.now(UTC), actor="test")  # type: ignore[arg-type]
    tx.advance_later(uuid4(), 2)
    tx.run_handler_later(uuid4())
    for job in tx.jobs:
        assert JOBS[job.name].decode((), job.args)  # and they decode


# --- decoding --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(JOBS))
def test_a_valid_message_decodes(name: str) -> None:
    assert set(JOBS[name].decode((), VALID[name])) == {a.name for a in JOBS[name].args}


def _bad_arguments() -> Iterator[tuple[str, str, Any]]:
    for name, spec in JOBS.items():
        for arg in spec.args:
            if arg.decode is not as_sent:
                yield name, arg.name, REFUSED[arg.decode.__name__]


@pytest.mark.parametrize(("name", "arg", "value"), list(_bad_arguments()))
def test_a_bad_argument_is_refused_naming_it(name: str, arg: str, value: Any) -> None:
    with pytest.raises(PoisonMessage, match=arg):
        JOBS[name].decode((), {**VALID[name], arg: value})


@pytest.mark.parametrize("name", list(JOBS))
def test_missing_extra_and_surplus_arguments_are_refused(name: str) -> None:
    spec = JOBS[name]
    for arg in (a for a in spec.args if a.required):
        sent = {k: v for k, v in VALID[name].items() if k != arg.name}
        with pytest.raises(PoisonMessage, match=f"missing argument '{arg.name}'"):
            spec.decode((), sent)
    with pytest.raises(PoisonMessage, match="unexpected argument 'extra'"):
        spec.decode((), {**VALID[name], "extra": 1})
    with pytest.raises(PoisonMessage, match="positional arguments"):
        spec.decode([None] * (len(spec.args) + 1), {})


@pytest.mark.parametrize("name", list(JOBS))
@pytest.mark.parametrize("value", [None, [1, 2], {"a": 1}, 1.5, True, "x"])
def test_decoding_raises_nothing_but_a_poison_message(name: str, value: Any) -> None:
    """Whatever a sender puts in a message, the worker sees a refusal, never a crash."""
    for arg in JOBS[name].args:
        try:
            JOBS[name].decode((), {**VALID[name], arg.name: value})
        except PoisonMessage as exc:
            assert arg.name in str(exc)


def test_positional_arguments_decode_in_order() -> None:
    token = str(uuid4())
    decoded = JOBS[JobName.ADVANCE_TOKEN].decode([token, 4], {})
    assert (str(decoded["token_id"]), decoded["expected_version"]) == (token, 4)


def test_the_log_line_shows_ids_as_sent() -> None:
    spec = JOBS[JobName.START_INSTANCE]
    sent = {"process_key": "order", "variables": {"secret": 1}, "business_key": "o-1"}
    assert spec.logged((), sent) == {"process_key": "order", "business_key": "o-1"}
    assert JOBS[JobName.ADVANCE_TOKEN].logged(["t-1"], {}) == {"token_id": "t-1"}


def test_jobs_are_named_by_the_enum() -> None:
    assert Job(JobName.RUN_HANDLER, {}).name == "bpm.run_handler"
    assert bpm.dispatch.ADVANCE_TOKEN is JobName.ADVANCE_TOKEN
