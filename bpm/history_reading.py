"""How a history row is read, in one place: which table it comes from, which token events put
a token at a node, which flow a token took, whether a token runs backwards (compensation) and
whether an arrival is a multi-instance iteration.

Replay (``bpm.engine.operations.replay``), the activity visits of the history API
(``history_views``), the diagram's marks (``bpm.diagram``) and the CLI's token paths
(``bpm.cli.paths``) all read the same rows; they read them through ``HistoryEvent`` so the rules
below hold for all four. A row comes either as stored (``EventRow``) or as ``Engine.trace``
gives it (a dict whose ``kind`` names the table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bpm.states import TokenEvent, TokenMode
from bpm.store.rows import EventRow


class HistoryTable(StrEnum):
    """The history table a row comes from (``kind`` in ``Engine.trace``)."""

    TOKEN = "token"
    TASK = "task"
    ENGINE = "engine"


#: Token events that count as a token arriving at their node (a diagram's counts): created or
#: moved there, or sent there by a caught error, a fired timer or a cancelled transaction.
COUNTED_ARRIVALS = frozenset(
    {
        TokenEvent.CREATED,
        TokenEvent.MOVED,
        TokenEvent.ERROR_CAUGHT,
        TokenEvent.TIMER_FIRED,
        TokenEvent.TRANSACTION_CANCELLED,
    }
)
#: Token events that start an activity visit (the history API): created or moved there, or a
#: path a non-interrupting boundary spawned; a token seen at another node starts one too.
VISIT_STARTS = frozenset({TokenEvent.CREATED, TokenEvent.MOVED, TokenEvent.SPAWNED})


def table_of(name: object) -> HistoryTable | None:
    return next((t for t in HistoryTable if t == name), None)


@dataclass(frozen=True)
class HistoryEvent:
    """One history row, typed: ids as text, ``data`` never None."""

    table: HistoryTable | None
    type: str
    node_id: str | None = None
    token_id: str | None = None
    task_id: str | None = None
    to_state: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of_view(cls, view: Mapping[str, Any]) -> HistoryEvent:
        """A row as ``Engine.trace`` gives it."""
        data = view.get("data")
        token, task = view.get("token_id"), view.get("task_id")
        return cls(
            table=table_of(view.get("kind")),
            type=str(view.get("type")),
            node_id=view.get("node_id"),
            token_id=str(token) if token else None,
            task_id=str(task) if task else None,
            to_state=view.get("to_state"),
            data=data if isinstance(data, Mapping) else {},
        )

    @classmethod
    def of_row(cls, row: EventRow) -> HistoryEvent:
        """A row as stored."""
        return cls(
            table=table_of(row.table),
            type=row.type,
            node_id=row.node_id,
            token_id=str(row.token_id) if row.token_id else None,
            task_id=str(row.task_id) if row.task_id else None,
            to_state=row.to_state,
            data=row.data or {},
        )

    @property
    def is_token(self) -> bool:
        return self.table is HistoryTable.TOKEN

    @property
    def mode(self) -> str:
        """A created token's mode (a compensation token runs backwards: it walks no flow)."""
        return str(self.data.get("mode", TokenMode.FORWARD))

    @property
    def runs_backward(self) -> bool:
        return (
            self.is_token
            and self.type == TokenEvent.CREATED
            and self.data.get("mode") == TokenMode.COMPENSATION
        )

    @property
    def arrives(self) -> bool:
        """A token arrived at ``node_id`` (``COUNTED_ARRIVALS``)."""
        return self.is_token and self.type in COUNTED_ARRIVALS

    @property
    def iteration(self) -> bool:
        """A multi-instance iteration: a token created inside the activity's own scope."""
        return self.data.get("scope") == self.node_id

    @property
    def flow(self) -> str | None:
        """The sequence flow a token took: a move's ``flow``, a creation's ``via``."""
        if not self.is_token:
            return None
        if self.type == TokenEvent.MOVED:
            flow = self.data.get("flow")
        elif self.type == TokenEvent.CREATED:
            flow = self.data.get("via")
        else:
            return None
        return flow if isinstance(flow, str) else None
