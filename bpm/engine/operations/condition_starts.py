"""Conditional start events of a process (Camunda's ``RuntimeService.evaluateConditions``,
``POST /condition``): the caller gives variables, and every conditional start event of the
latest version of each process (or of the one process named) whose condition holds over
them starts an instance there, with those variables, in one transaction.

Nothing listens between two calls: a conditional start is evaluated only when a caller asks
(as in Camunda), so there is no subscription row to keep. The latest versions are read once
per call and their compiled graphs come from the engine's cache. As in Camunda, a call that
finds no conditional start event deployed at all is refused, and one whose condition cannot
be evaluated over the variables (it reads one that is not given) refuses the whole call,
naming the start event: nothing is started then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.operations.lifecycle import Started
from bpm.engine.semantics import instances as instance_rows
from bpm.errors import ExpressionEvalError, InvalidOperation, NotFound
from bpm.expressions import evaluate_condition
from bpm.states import InstanceState
from bpm.store import definitions
from bpm.variables import check_variables


def evaluate(
    core: EngineCore,
    variables: Mapping[str, Any] | None,
    *,
    business_key: str | None = None,
    process_key: str | None = None,
    definition_id: UUID | None = None,
) -> list[Started]:
    """Start an instance at each conditional start event whose condition holds; the
    instances started, in process key order (none when no condition holds). ``process_key``
    limits it to that process's latest version, ``definition_id`` to that version."""
    checked = check_variables(variables, where="conditions")
    started: list[Started] = []
    with core.transaction() as tx:
        if process_key is not None or definition_id is not None:
            row = (
                definitions.by_id(tx.conn, definition_id)
                if definition_id is not None
                else definitions.latest(tx.conn, process_key or "")
            )
            rows = [row] if row is not None else []
        else:
            rows = definitions.latest_of_each_key(tx.conn)
        graphs = [(row, core.graph(row.id, tx.conn)) for row in rows]
        candidates = [(row, g) for row, g in graphs if g.conditional_starts]
        if not candidates:
            which = (
                "any deployed process"
                if process_key is None and definition_id is None
                else f"process {process_key or str(definition_id)!r}"
            )
            raise NotFound(f"no conditional start event in {which}: nothing to evaluate")
        for row, g in candidates:
            for start_id in g.conditional_starts:
                condition = g.node(start_id).condition
                assert condition is not None
                try:
                    holds = evaluate_condition(condition.expression, checked)
                except ExpressionEvalError as exc:
                    raise InvalidOperation(
                        f"conditional start event {start_id!r} of {row.key!r}: {exc}"
                    ) from None
                if not holds:
                    continue
                made = instance_rows.create(
                    tx,
                    row,
                    g,
                    dict(checked),
                    business_key=business_key,
                    start_key=None,
                    start_event=start_id,
                )
                assert made is not None, "a start without a start key is never taken"
                inst, root = made
                tx.advance_later(root.id, 0)
                started.append(Started(inst.id, row.key, business_key, InstanceState.RUNNING, True))
    return started
