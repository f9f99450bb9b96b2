"""Hit policies: which of the matched rules make the result, and when matching rules break the
table's promise (UNIQUE with two matches, ANY with different outputs)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from bpm.dmn.feel_values import FeelError, kind, show
from bpm.dmn.results import MatchedRule


class HitPolicy(StrEnum):
    UNIQUE = "UNIQUE"
    FIRST = "FIRST"
    PRIORITY = "PRIORITY"
    ANY = "ANY"
    COLLECT = "COLLECT"
    RULE_ORDER = "RULE ORDER"
    OUTPUT_ORDER = "OUTPUT ORDER"


class Aggregation(StrEnum):
    SUM = "SUM"
    MIN = "MIN"
    MAX = "MAX"
    COUNT = "COUNT"


#: Hit policies whose result may hold several rules.
MULTIPLE = frozenset({HitPolicy.COLLECT, HitPolicy.RULE_ORDER, HitPolicy.OUTPUT_ORDER})
#: Hit policies that order rules by the outputs' ``outputValues``.
BY_OUTPUT_VALUES = frozenset({HitPolicy.PRIORITY, HitPolicy.OUTPUT_ORDER})


def select(
    policy: HitPolicy,
    matched: Sequence[MatchedRule],
    priorities: Sequence[tuple[str, tuple[Any, ...]]] = (),
) -> tuple[MatchedRule, ...]:
    """The rules in the result, in result order; ``priorities`` are (output name, output values
    from highest to lowest priority) for PRIORITY and OUTPUT ORDER. Raises ``FeelError``."""
    if policy is HitPolicy.UNIQUE:
        if len(matched) > 1:
            raise FeelError(
                f"hit policy UNIQUE allows one matching rule, but {len(matched)} matched: "
                f"{_ids(matched)}"
            )
        return tuple(matched)
    if policy is HitPolicy.FIRST:
        return tuple(matched[:1])
    if policy is HitPolicy.ANY:
        for other in matched[1:]:
            if not _same_outputs(matched[0].outputs, other.outputs):
                raise FeelError(
                    f"hit policy ANY needs the matching rules to give equal outputs, but "
                    f"rule '{matched[0].rule_id}' gives {_outputs(matched[0])} and rule "
                    f"'{other.rule_id}' gives {_outputs(other)}"
                )
        return tuple(matched[:1])
    if policy in BY_OUTPUT_VALUES:
        ordered = sorted(matched, key=lambda rule: _priority(rule, priorities))
        return tuple(ordered[:1]) if policy is HitPolicy.PRIORITY else tuple(ordered)
    return tuple(matched)


def aggregate(aggregation: Aggregation, matched: Sequence[MatchedRule]) -> Any:
    """COLLECT's aggregate over the single output of ``matched``; ``None`` when SUM, MIN or MAX
    have no value. Rules whose output entry is empty give no value (and do not count)."""
    values = [next(iter(rule.outputs.values())) for rule in matched if rule.outputs]
    if aggregation is Aggregation.COUNT:
        return len(values)
    if not values:
        return None
    for rule, value in zip((r for r in matched if r.outputs), values, strict=True):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FeelError(
                f"COLLECT {aggregation.value} needs numbers, but rule '{rule.rule_id}' gives "
                f"{show(value)} ({kind(value)})"
            )
    if aggregation is Aggregation.SUM:
        return sum(values)
    if aggregation is Aggregation.MIN:
        return min(values)
    return max(values)


def _priority(rule: MatchedRule, priorities: Sequence[tuple[str, tuple[Any, ...]]]) -> list[int]:
    key: list[int] = []
    for name, ranked in priorities:
        if name not in rule.outputs:
            key.append(len(ranked))
            continue
        value = rule.outputs[name]
        position = next(
            (i for i, v in enumerate(ranked) if kind(v) == kind(value) and v == value), None
        )
        if position is None:
            raise FeelError(
                f"rule '{rule.rule_id}' gives {name} = {show(value)}, which is not one of the "
                f"output's values ({', '.join(show(v) for v in ranked)}), so it has no priority"
            )
        key.append(position)
    return key


def _same_outputs(left: dict[str, Any], right: dict[str, Any]) -> bool:
    if left.keys() != right.keys():
        return False
    return all(kind(left[k]) == kind(right[k]) and left[k] == right[k] for k in left)


def _ids(rules: Sequence[MatchedRule], limit: int = 10) -> str:
    shown = ", ".join(f"'{r.rule_id}' (row {r.row})" for r in rules[:limit])
    return shown + (f", ... ({len(rules)} in all)" if len(rules) > limit else "")


def _outputs(rule: MatchedRule) -> str:
    return "{" + ", ".join(f"{k}: {show(v)}" for k, v in rule.outputs.items()) + "}"
