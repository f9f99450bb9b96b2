"""The instance starts and ends a transaction wrote, read from its history rows, for the
engine's observer (``bpm.observe``): every state change of an instance writes one, so the
rows are the one place that sees them all, whichever operation made them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from bpm.engine.core.tx import Tx
from bpm.observe import Observer
from bpm.states import ENDED_INSTANCE, EngineEvent, InstanceState

#: The history row each counted instance state change writes, and the state it means.
_STATE_OF_EVENT: dict[str, InstanceState] = {
    EngineEvent.INSTANCE_COMPLETED: InstanceState.COMPLETED,
    EngineEvent.INSTANCE_FAILED: InstanceState.FAILED,
    EngineEvent.INSTANCE_TERMINATED: InstanceState.TERMINATED,
    EngineEvent.INSTANCE_CANCELLED: InstanceState.CANCELLED,
}

#: An instance's process key and start time (None when unknown), by its id.
Lookup = Callable[[UUID], tuple[str, datetime | None]]


@dataclass(frozen=True, slots=True)
class InstanceMove:
    """One instance started (``state`` None) or changed to ``state``."""

    process_key: str
    state: InstanceState | None
    seconds: float | None

    def tell(self, observer: Observer) -> None:
        if self.state is None:
            observer.instance_started(self.process_key)
        else:
            observer.instance_ended(self.process_key, self.state, self.seconds)


def instance_moves(tx: Tx, lookup: Lookup) -> list[InstanceMove]:
    """The starts and state changes among ``tx``'s history rows, before it commits (the
    lookup may read the instance in ``tx``). A FAILED instance may run again, so only an
    instance that ended for good has a duration."""
    moves: list[InstanceMove] = []
    for table, row in tx.history.rows:
        if table != "engine":
            continue
        kind = row["type"]
        if kind == EngineEvent.INSTANCE_STARTED:
            moves.append(InstanceMove(str((row["data"] or {}).get("key", "")), None, None))
            continue
        state = _STATE_OF_EVENT.get(kind)
        if state is None or row["instance_id"] is None:
            continue
        key, started_at = lookup(row["instance_id"])
        seconds = (
            (tx.now - started_at).total_seconds()
            if started_at is not None and state in ENDED_INSTANCE
            else None
        )
        moves.append(InstanceMove(key, state, seconds))
    return moves
