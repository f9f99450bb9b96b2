"""What a subscription's function did, and the one engine call that reports it.

The worker and the testing kit (``ProcessTestKit.work``) both turn a function's return value or
exception into a report with these two functions, so a test sees exactly what the worker
would have sent.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any

from bpm.engine.operations.external import LockedTask
from bpm.errors import BpmnError
from bpm.sdk.transport import TaskTransport

TaskFn = Callable[[LockedTask], Mapping[str, Any] | None]
MAX_DETAILS = 8000


class ReportKind(Enum):
    COMPLETE = "complete"
    FAIL = "fail"
    BPMN_ERROR = "bpmn_error"


@dataclass(frozen=True)
class Report:
    """One outcome to send. A failure with ``retries`` left is offered again after
    ``retry_timeout``; ``retries=0`` makes it an incident at once."""

    kind: ReportKind
    variables: Mapping[str, Any] | None = None
    message: str = ""
    details: str | None = None
    code: str = ""
    retries: int = 0
    retry_timeout: timedelta = timedelta(0)
    #: The function's result cannot be a report (not a dict, variables the engine refuses).
    refused: bool = False


def run_task(fn: TaskFn, task: LockedTask) -> Report:
    """Call ``fn`` on the task; never raises. A return value that is not a dict fails the
    task with no retries: running it again would return the same."""
    try:
        result = fn(task)
    except BpmnError as error:
        return Report(
            ReportKind.BPMN_ERROR, variables=error.variables, message=error.message, code=error.code
        )
    except Exception as error:
        return Report(
            ReportKind.FAIL,
            message=f"{type(error).__name__}: {error}",
            details=traceback.format_exc()[-MAX_DETAILS:],
            retries=task.retries,
            retry_timeout=task.backoff,
        )
    if result is not None and not isinstance(result, Mapping):
        name = getattr(fn, "__name__", repr(fn))
        return refusal(
            f"handler {name!r} of topic {task.topic!r} returned "
            f"{type(result).__name__}; a handler returns a dict of variables or None"
        )
    return Report(ReportKind.COMPLETE, variables=result)


def refusal(problem: str) -> Report:
    """A result the engine cannot take: fail the task with no retries, naming why."""
    return Report(ReportKind.FAIL, message=problem, refused=True)


def send(engine: TaskTransport, worker_id: str, task: LockedTask, report: Report) -> None:
    """Report to the engine; raises what the engine raises (a lost lock, bad variables).

    Each report names the attempt it is about, so one sent again after its first send landed
    unseen (a reply lost in a database outage) cannot close the task's next run.
    """
    if report.kind is ReportKind.COMPLETE:
        engine.complete(task.id, worker_id, report.variables, attempt=task.attempt)
    elif report.kind is ReportKind.BPMN_ERROR:
        engine.bpmn_error(
            task.id,
            worker_id,
            report.code,
            report.message,
            report.variables,
            attempt=task.attempt,
        )
    else:
        engine.fail(
            task.id,
            worker_id,
            report.message,
            report.details,
            retries=report.retries,
            retry_timeout=report.retry_timeout,
            attempt=task.attempt,
        )
