"""Deploying DMN files and evaluating a decision outside any process (``bpm decide``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bpm.definitions.model import DecisionBinding, DecisionRef
from bpm.dmn import Decision, parse_dmn
from bpm.dmn import map_result as shape
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Conflict, Tx
from bpm.engine.semantics import decisions as evaluation
from bpm.states import EngineEvent
from bpm.store import decisions
from bpm.store.decisions import DecisionVersionTaken
from bpm.variables import check_variables

OPERATOR = "operator"


@dataclass(frozen=True)
class DeployedDecision:
    id: UUID
    key: str
    version: int
    created: bool


def deploy_dmn(core: EngineCore, xml: str | bytes) -> list[DeployedDecision]:
    """Every decision of a DMN file, each a new version of its key unless the file is the
    one its latest version came from. The whole file is checked before anything is stored."""
    parsed = parse_dmn(xml)
    source = xml if isinstance(xml, str) else xml.decode("utf-8", "replace")
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    out = []
    for decision in parsed.decisions.values():
        for _ in range(5):
            try:
                with core.transaction(OPERATOR) as tx:
                    out.append(_store(tx, decision, source, digest))
                break
            except DecisionVersionTaken:
                continue  # a concurrent deploy took the number: look again
        else:
            raise Conflict(f"could not deploy decision {decision.key!r}: concurrent deploys")
    return out


def _store(tx: Tx, decision: Decision, source: str, digest: str) -> DeployedDecision:
    key = decision.key
    latest = decisions.latest(tx.conn, key)
    if latest is not None and latest.checksum == digest:
        return DeployedDecision(latest.id, key, latest.version, created=False)
    row = decisions.insert(
        tx.conn,
        key=key,
        name=decision.name or key,
        version=latest.version + 1 if latest else 1,
        version_tag=decision.version_tag,
        source_text=source,
        checksum=digest,
        now=tx.now,
    )
    tx.history.engine(
        instance_id=None,
        at=tx.now,
        type=EngineEvent.DECISION_DEPLOYED,
        actor=tx.actor,
        data={"id": str(row.id), "key": key, "version": row.version},
    )
    return DeployedDecision(row.id, key, row.version, created=True)


def decide(
    core: EngineCore,
    key: str,
    variables: Mapping[str, Any] | None,
    version: int | None = None,
    map_result: str = "resultList",
) -> dict[str, Any]:
    """Evaluate decision ``key`` (latest, or ``version``) over ``variables``: the audit view
    a business rule task writes to history, with the mapped ``result``. Nothing is stored."""
    values = check_variables(variables, where=f"decision {key!r}")
    ref = DecisionRef(
        key,
        DecisionBinding.VERSION if version is not None else DecisionBinding.LATEST,
        version,
        map_result=map_result,
    )
    with core.db.transaction() as conn:
        row = evaluation.find(conn, ref)
        decision = evaluation.parsed(conn, row)
    result = decision.evaluate(values)
    value = evaluation.jsonable(shape(result, map_result))
    return evaluation.audit(row, result, value)
