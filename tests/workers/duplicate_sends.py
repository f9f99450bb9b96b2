"""Imported by the worker processes of the duplicate-delivery test: every job goes out twice."""

from __future__ import annotations

from collections.abc import Sequence

from bpm.dispatch import Job
from bpm_workers.dispatcher import CeleryDispatcher

_send_once = CeleryDispatcher.dispatch


def _send_twice(self: CeleryDispatcher, jobs: Sequence[Job]) -> None:
    _send_once(self, jobs)
    _send_once(self, jobs)


CeleryDispatcher.dispatch = _send_twice  # type: ignore[method-assign]
