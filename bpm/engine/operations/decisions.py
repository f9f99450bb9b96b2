"""Deploying DMN files and evaluating a decision outside any process (``bpm decide``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import DecisionBinding, DecisionRef
from bpm.dmn import map_result as shape
from bpm.dmn import parse_dmn
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.operations import deployments
from bpm.engine.operations.deployments import DeployedDecision as DeployedDecision
from bpm.engine.semantics import decisions as evaluation
from bpm.variables import check_variables

OPERATOR = "operator"


def deploy_dmn(
    core: EngineCore, xml: str | bytes, *, name: str | None = None, resource: str | None = None
) -> list[DeployedDecision]:
    """Every decision of a DMN file, each a new version of its key unless the file is the
    one its latest version came from, in one deployment. The whole file is checked before
    anything is stored."""
    content = xml.encode() if isinstance(xml, str) else xml
    if resource is None:
        resource = f"{next(iter(parse_dmn(content).decisions), 'decisions')}.dmn"
    files = [deployments.Resource(resource, content, deployments.ResourceKind.DMN)]
    return deployments.deploy(core, files, name=name or resource).decisions


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
