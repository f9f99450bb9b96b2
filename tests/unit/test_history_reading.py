"""``bpm.history_reading``: one reading of a history row for replay, the history API's visits,
the diagram and the CLI's paths."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from bpm.history_reading import HistoryEvent, HistoryTable
from bpm.store.rows import EventRow


def test_a_trace_row_and_a_stored_row_read_the_same() -> None:
    token = uuid4()
    row = EventRow(
        id=1,
        table="token",
        instance_id=uuid4(),
        at=datetime(2026, 1, 1, tzinfo=UTC),
        type="MOVED",
        node_id="b",
        from_state="ACTIVE",
        to_state="ACTIVE",
        token_id=token,
        task_id=None,
        actor=None,
        data={"flow": "f1", "from": "a"},
    )
    view = {"kind": "token", "type": "MOVED", "node_id": "b", "token_id": str(token),
            "to_state": "ACTIVE", "data": {"flow": "f1", "from": "a"}}  # fmt: skip
    assert HistoryEvent.of_row(row) == HistoryEvent.of_view(view)
    read = HistoryEvent.of_view(view)
    assert read.table is HistoryTable.TOKEN and read.arrives and read.flow == "f1"
    assert not read.runs_backward and not read.iteration


def test_creations_compensation_and_iterations() -> None:
    created = HistoryEvent.of_view(
        {"kind": "token", "type": "CREATED", "node_id": "mi", "data": {"via": "f0", "scope": "mi"}}
    )
    assert created.flow == "f0" and created.iteration and created.mode == "FORWARD"
    backward = HistoryEvent.of_view(
        {"kind": "token", "type": "CREATED", "node_id": "a", "data": {"mode": "COMPENSATION"}}
    )
    assert backward.runs_backward and backward.mode == "COMPENSATION"
    task = HistoryEvent.of_view({"kind": "task", "type": "CREATED", "node_id": "a"})
    assert task.table is HistoryTable.TASK and not task.arrives and task.flow is None
    assert HistoryEvent.of_view({"kind": "other", "type": "X"}).table is None
