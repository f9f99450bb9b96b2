"""The shape of an entry of the job table: what a job takes, where it is queued, what it runs.

A runtime (the Celery tasks, the embedded loop) knows nothing about any one job: it reads the
entry, decodes the message with it, runs it and reports the outcome the way the entry says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol, Unpack
from uuid import UUID

from bpm.dispatch import JobName
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.jobs.args import Arg, decode
from bpm.engine.jobs.runner import JobRunner
from bpm.engine.operations.lifecycle import Started, StartOptions
from bpm.engine.operations.scans import ScanConfig


class JobQueue(StrEnum):
    """The queues jobs wait in, one per kind of work, so a worker can be given some of them
    (handler-only hosts, say) and a flood of one kind never delays the others."""

    TOKENS = "bpm.tokens"
    HANDLERS = "bpm.handlers"
    COMPENSATION = "bpm.compensation"
    #: Requests from other services (starts, messages): no row records them, only their
    #: message does.
    STARTS = "bpm.starts"
    SCANS = "bpm.scans"


class Period(StrEnum):
    """Which configured period beat sends a job on (the runtime maps each to its setting)."""

    SCANS = "scans"
    TIMERS = "timers"
    CLEANUP = "cleanup"


class StartRefused(Exception):
    """Raised to a sender that waits for the result of a start that was refused (an unknown
    process key, bad variables)."""


class CorrelationRefused(Exception):
    """Raised to a sender that waits for the result of a correlation that was refused (no
    token waits for the message)."""


class JobEngine(Protocol):
    """What a job calls on the engine: the facade, which this package cannot import (it is
    built from it)."""

    @property
    def core(self) -> EngineCore: ...

    @property
    def runner(self) -> JobRunner: ...

    def start(
        self,
        key: str,
        variables: Mapping[str, Any] | None = None,
        *,
        run_now: bool = False,
        **options: Unpack[StartOptions],
    ) -> Started: ...

    def correlate(
        self,
        message: str,
        *,
        business_key: str | None = None,
        instance_id: UUID | str | None = None,
        variables: Mapping[str, Any] | None = None,
        all_waiting: bool = False,
        start_messages_only: bool = False,
        idempotency_key: str | None = None,
        message_id: str | None = None,
    ) -> list[UUID]: ...


@dataclass(frozen=True)
class JobSettings:
    """What the runtime configures for the jobs it runs: the scans' grace period and batch,
    and the TTL of ended instances whose definition sets none (None: they are kept)."""

    scan: ScanConfig = field(default_factory=ScanConfig)
    history_ttl: timedelta | None = None
    #: Signal deliveries per transaction (``bpm.deliver_signal``).
    signal_batch: int = 200


@dataclass(frozen=True)
class Call:
    """One run of a job: the engine, its decoded arguments, the runtime's settings, and the
    id of the message that carried it (when the runtime has one)."""

    engine: JobEngine
    args: Mapping[str, Any]
    settings: JobSettings = field(default_factory=JobSettings)
    message_id: str | None = None


@dataclass(frozen=True)
class Done:
    """How a job ended: ``outcome`` for its log line; ``answer`` for a sender waiting on the
    result (a started instance's id); ``again`` when it left work for a fresh run of itself,
    so one long sweep never holds a worker."""

    outcome: str
    answer: Mapping[str, Any] = field(default_factory=dict)
    again: bool = False


@dataclass(frozen=True)
class Found:
    """What one scan found: ``count`` for ``Engine.run_scans``, ``shown`` for the log line
    of the job that ran it (``stalled_tokens=3``)."""

    count: int
    shown: str


@dataclass(frozen=True)
class Scan:
    """One scan a scan job runs; ``name`` is the key ``Engine.run_scans`` reports it under."""

    name: str
    run: Callable[[EngineCore, datetime, ScanConfig], Found]


@dataclass(frozen=True)
class JobSpec:
    """One job: its name, queue, arguments and the function that runs it.

    ``refusal`` is set for a job that answers a sender (with a result backend configured):
    the error that sender sees when the job is refused. ``scans``, set for a recovery scan,
    is what it runs (a starting worker sends every such job once). ``every``: beat sends it
    on that period. ``keyed_by_message``: the message's id is the last fallback of its
    idempotency key, so a message delivered again does the work once.
    """

    name: JobName
    queue: JobQueue
    run: Callable[[Call], Done]
    args: tuple[Arg, ...] = ()
    refusal: type[Exception] | None = None
    scans: tuple[Scan, ...] = ()
    every: Period | None = None
    keyed_by_message: bool = False

    def __post_init__(self) -> None:
        flags = [a.required for a in self.args]
        if flags != sorted(flags, reverse=True):
            raise ValueError(f"{self.name}: required arguments must come before optional ones")

    @property
    def message_only(self) -> bool:
        """No row records this job's work, only its message: a request from another service.
        A runtime must never acknowledge one it did not carry out or refuse."""
        return self.queue is JobQueue.STARTS

    def decode(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        return decode(self.args, args, kwargs)

    def logged(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments its log line shows, as sent (the message may not decode)."""
        return {
            a.name: kwargs.get(a.name, args[i] if i < len(args) else None)
            for i, a in enumerate(self.args)
            if a.logged
        }
