"""What an evaluation gives back, and Camunda's four ways of turning it into one variable
(``camunda:mapDecisionResult`` on a business rule task).

A decision result is a list of entry maps, one per matched rule in result order (output name to
value), or a single ``{output: aggregate}`` for COLLECT with an aggregation. No matched rule is
not an error: the list is empty, and ``singleEntry`` and ``singleResult`` map it to ``None``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bpm.errors import DecisionResultError, InvalidDefinition


@dataclass(frozen=True)
class EvaluatedInput:
    """One input column's value for this evaluation, after its typeRef conversion."""

    input_id: str
    label: str
    expression: str
    value: Any


@dataclass(frozen=True)
class MatchedRule:
    """A rule in the result: its id, its row (1-based) and its non-empty output entries."""

    rule_id: str
    row: int
    outputs: dict[str, Any]


@dataclass(frozen=True)
class DecisionResult:
    """One decision's evaluation. ``rules`` are the rules the hit policy kept, in result order;
    for COLLECT with an aggregation ``rules`` are all matched rules and ``aggregate`` their
    aggregated value (``None`` when no rule gave a value to SUM, MIN or MAX)."""

    decision: str
    rules: tuple[MatchedRule, ...]
    inputs: tuple[EvaluatedInput, ...]
    #: The table's hit policy (``None`` for a literal expression, whose ``rules`` hold one
    #: entry with row 0 and the literalExpression's id).
    hit_policy: str | None = None
    aggregation: str | None = None
    aggregate: Any = None
    aggregate_name: str = ""
    #: Results of the required decisions evaluated first (DRD), in evaluation order.
    required: tuple[DecisionResult, ...] = field(default=(), repr=False)

    @property
    def entries(self) -> list[dict[str, Any]]:
        """Camunda's result list: one entry map per rule, or one map with the aggregate."""
        if self.aggregation is None:
            return [dict(rule.outputs) for rule in self.rules]
        if self.aggregate is None:
            return []
        return [{self.aggregate_name: self.aggregate}]

    @property
    def rule_ids(self) -> list[str]:
        return [rule.rule_id for rule in self.rules]


class ResultMode(StrEnum):
    """The values of ``camunda:mapDecisionResult``; ``resultList`` is Camunda's default."""

    SINGLE_ENTRY = "singleEntry"
    SINGLE_RESULT = "singleResult"
    COLLECT_ENTRIES = "collectEntries"
    RESULT_LIST = "resultList"


def result_mode(text: str | None) -> ResultMode:
    """The mode named by a ``camunda:mapDecisionResult`` value (absent: ``resultList``)."""
    if text is None or text == "":
        return ResultMode.RESULT_LIST
    try:
        return ResultMode(text)
    except ValueError:
        names = ", ".join(mode.value for mode in ResultMode)
        raise InvalidDefinition(
            f"mapDecisionResult {text!r} is not one of {names}", "mapDecisionResult"
        ) from None


def map_result(result: DecisionResult, mode: ResultMode | str = ResultMode.RESULT_LIST) -> Any:
    """``result`` shaped as ``mode`` asks:

    - ``singleEntry``: the one value of the one entry map; ``None`` if no rule matched;
    - ``singleResult``: the one entry map; ``None`` if no rule matched;
    - ``collectEntries``: the values of the one output name across all entry maps;
    - ``resultList``: all entry maps.

    Raises ``DecisionResultError`` when the result has more than the mode can hold."""
    chosen = mode if isinstance(mode, ResultMode) else result_mode(mode)
    entries = result.entries
    if chosen is ResultMode.RESULT_LIST:
        return entries
    if chosen is ResultMode.COLLECT_ENTRIES:
        names = sorted({name for entry in entries for name in entry})
        if len(names) > 1:
            raise _unfit(result, chosen, f"it has values for several outputs ({_join(names)})")
        return [entry[names[0]] for entry in entries if names[0] in entry] if names else []
    if len(entries) > 1:
        raise _unfit(result, chosen, f"{len(entries)} rules matched ({_join(result.rule_ids)})")
    if not entries:
        return None
    if chosen is ResultMode.SINGLE_RESULT:
        return entries[0]
    if len(entries[0]) > 1:
        shown = _join(list(entries[0]))
        raise _unfit(result, chosen, f"the matched rule has several output values ({shown})")
    return next(iter(entries[0].values()), None)


def _join(names: list[str], limit: int = 10) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _unfit(result: DecisionResult, mode: ResultMode, why: str) -> DecisionResultError:
    inputs = {i.input_id: i.value for i in result.inputs}
    needs = {
        ResultMode.SINGLE_ENTRY: "at most one matched rule with one output value",
        ResultMode.SINGLE_RESULT: "at most one matched rule",
        ResultMode.COLLECT_ENTRIES: "the values of one output only",
    }[mode]
    return DecisionResultError(
        f"decision '{result.decision}': mapDecisionResult {mode.value} needs {needs}, but {why}",
        result.decision,
        inputs,
    )
