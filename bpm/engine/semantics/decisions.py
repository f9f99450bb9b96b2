"""A business rule task: its DMN decision evaluated in the token's own transaction.

Evaluating runs no user code (the DMN evaluator only reads variables), so it needs no lock and
no task: the token reads the variables, evaluates, stores the mapped result and moves on, with
a history row naming the decision version, the inputs and the matched rules, all in one
commit. A decision that cannot be found, or fails (its hit policy broken, a result that does
not fit ``mapDecisionResult``), fails the token with an incident of kind ``decision``.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import date, time
from decimal import Decimal
from typing import Any
from uuid import UUID

from sqlalchemy import Connection

from bpm.definitions.model import DecisionBinding, DecisionRef, Node, ProcessGraph
from bpm.dmn import Decision, DecisionResult, map_result, parse_dmn
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import scopes
from bpm.engine.semantics.failures import fail_token
from bpm.errors import BpmError
from bpm.states import EngineEvent
from bpm.store import decisions, definitions, instances
from bpm.store.decisions import DecisionRow
from bpm.store.rows import DefinitionRow, TokenRow

#: Parsed decisions by row id (rows never change); the least recently used go first.
_PARSED: OrderedDict[UUID, Decision] = OrderedDict()
_PARSED_MAX = 256


class DecisionNotFound(BpmError):
    """No deployed decision matches a business rule task's reference."""


def evaluate(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> bool:
    """Evaluate the node's decision and store its result: True, and the caller leaves the
    node; or fail the token saying why: False."""
    ref = node.decision
    assert ref is not None
    variables = scopes.view(tx, g, tok)
    try:
        row = find(tx.conn, ref, _process_of(tx, tok))
        result = parsed(tx.conn, row).evaluate(variables)
        value = jsonable(map_result(result, ref.map_result))
    except BpmError as exc:
        fail_token(tx, tok, kind="decision", message=f"task {node.id!r}: {exc}")
        return False
    tx.history.engine(
        instance_id=tok.instance_id,
        at=tx.now,
        type=EngineEvent.DECISION_EVALUATED,
        node_id=node.id,
        token_id=tok.id,
        actor=tx.actor,
        data=audit(row, result, value),
    )
    if node.result_variable is not None:
        scopes.write(tx, g, tok, {node.result_variable: value})
    if node.outputs:  # as Camunda 7: the whole result, local, for the output mappings
        scopes.write(tx, g, tok, {"decisionResult": jsonable(result.entries)}, local=True)
    return True


def _process_of(tx: Tx, tok: TokenRow) -> DefinitionRow | None:
    inst = instances.get(tx.conn, tok.instance_id)
    return None if inst is None else definitions.by_id(tx.conn, inst.process_def_id)


def find(conn: Connection, ref: DecisionRef, process: DefinitionRow | None = None) -> DecisionRow:
    """``process``: the definition of the evaluating instance, for the ``deployment``
    binding: the decision deployed with it, or, when that deployment left the DMN file out
    because it had not changed (bpm stores no version equal to the one before), the version
    that was the latest when the process was deployed."""
    if ref.binding is DecisionBinding.DEPLOYMENT:
        row = None
        if process is not None and process.deployment_id is not None:
            row = decisions.of_deployment_or_before(
                conn, ref.key, process.deployment_id, process.created_at
            )
        which = "deployed with the process"
    elif ref.binding is DecisionBinding.VERSION:
        assert ref.version is not None
        row = decisions.by_key_version(conn, ref.key, ref.version)
        which = f"version {ref.version}"
    elif ref.binding is DecisionBinding.VERSION_TAG:
        assert ref.version_tag is not None
        row = decisions.by_version_tag(conn, ref.key, ref.version_tag)
        which = f"version tag {ref.version_tag!r}"
    else:
        row = decisions.latest(conn, ref.key)
        which = "any version"
    if row is None:
        raise DecisionNotFound(
            f"no decision {ref.key!r} ({which}) is deployed; deploy its DMN file with "
            f"bpm deploy FILE.dmn"
        )
    return row


def parsed(conn: Connection, row: DecisionRow) -> Decision:
    found = _PARSED.get(row.id)
    if found is None:
        found = parse_dmn(decisions.source(conn, row.id)).decision(row.key)
        _PARSED[row.id] = found
        if len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(row.id)
    return found


def audit(row: DecisionRow, result: DecisionResult, value: Any) -> dict[str, Any]:
    """What an evaluation is kept as: which version ran over which inputs, which rules
    matched, and what was stored."""
    return {
        "decision": row.key,
        "version": row.version,
        "decision_id": str(row.id),
        "hit_policy": result.hit_policy,
        "inputs": {i.input_id: jsonable(i.value) for i in result.inputs},
        "matched_rules": result.rule_ids,
        "outputs": [jsonable(r.outputs) for r in result.rules],
        "result": value,
    }


def jsonable(value: Any) -> Any:
    """DMN values as JSON: dates and times in ISO 8601, as a variable would hold them."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value
