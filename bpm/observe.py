"""What the engine tells an observer as it works: steps, handler runs, version conflicts,
instances started and ended. A process that exports metrics passes an ``Observer`` to its
``Engine`` (``bpm_metrics.PrometheusObserver``); without one nothing is measured.

The engine calls an observer outside any transaction and lock, after the work it reports
has committed (a rolled-back step is not counted), so an observer must be cheap and must
not raise; the labels it is given are few and bounded (node types, handler names, process
keys, states), never an instance, token or task id.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class HandlerOutcome(StrEnum):
    """How one handler run ended."""

    #: It returned: its variables were recorded.
    OK = "ok"
    #: It raised a BPMN error (one a boundary event or event subprocess may catch).
    BPMN_ERROR = "bpmn_error"
    #: It raised any other exception: a retry or an incident.
    FAILED = "failed"


class ConflictKind(StrEnum):
    """Why a transaction was tried again from fresh reads."""

    #: A row it changed had moved on (a version check or a lock in the write batch).
    VERSION = "version"
    #: The database refused it for a reason a retry clears (a serialization failure, a
    #: deadlock, a dropped connection).
    DATABASE = "database"


class Observer(Protocol):
    """Receives the engine's measurements; every method must return quickly."""

    #: False: the engine skips the work of measuring (a no-op observer).
    enabled: bool

    def step_done(self, node_type: str, seconds: float) -> None:
        """One token step committed: the transaction that moved a token from a node of
        ``node_type`` on (through the automatic nodes after it)."""

    def handler_done(self, handler: str, seconds: float, outcome: HandlerOutcome) -> None:
        """A handler (or a model's expression, script or listener) ran for ``seconds``."""

    def conflict(self, kind: ConflictKind) -> None:
        """A transaction lost a race and is tried again."""

    def instance_started(self, process_key: str) -> None:
        """An instance of ``process_key`` was started."""

    def instance_ended(self, process_key: str, state: str, seconds: float | None) -> None:
        """An instance reached ``state`` (COMPLETED, FAILED, TERMINATED, CANCELLED),
        ``seconds`` after it started (None when its start time is not known here)."""


class NoObserver:
    """Measures nothing: the engine's default."""

    enabled = False

    def step_done(self, node_type: str, seconds: float) -> None:
        return None

    def handler_done(self, handler: str, seconds: float, outcome: HandlerOutcome) -> None:
        return None

    def conflict(self, kind: ConflictKind) -> None:
        return None

    def instance_started(self, process_key: str) -> None:
        return None

    def instance_ended(self, process_key: str, state: str, seconds: float | None) -> None:
        return None


NO_OBSERVER: Observer = NoObserver()
