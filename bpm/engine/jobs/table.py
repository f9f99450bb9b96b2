"""Which engine function each job name runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from bpm.dispatch import ADVANCE_TOKEN, RUN_COMPENSATION, RUN_HANDLER, Job
from bpm.engine.core.causes import because
from bpm.engine.jobs.runner import JobRunner


def _fmt(args: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in args.items())


def run_job(runner: JobRunner, job: Job) -> str:
    """Execute one dispatched job by name (what a Celery task or the embedded loop calls)."""
    with because(f"{job.name} {_fmt(job.args)}"):
        if job.name == ADVANCE_TOKEN:
            return runner.advance(UUID(job.args["token_id"]), int(job.args["expected_version"]))
        if job.name == RUN_HANDLER:
            return runner.run_handler(UUID(job.args["task_id"]))
        if job.name == RUN_COMPENSATION:
            return runner.run_compensation(
                UUID(job.args["token_id"]), int(job.args["expected_version"])
            )
        raise ValueError(f"unknown job {job.name!r}")
