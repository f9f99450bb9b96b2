"""Evaluation of a decision over a caller's variables, in Camunda 7's order: required decisions
first (their results become variables), then every input expression, then each input's entries
over the rules still matching, then the output entries of the matched rules, then the hit
policy. Any problem becomes one ``DecisionFailed`` naming the decision, the cell and the
input values seen so far."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bpm.dmn.feel_ast import Scope
from bpm.dmn.feel_values import FeelError, show
from bpm.dmn.hit_policies import BY_OUTPUT_VALUES, MULTIPLE, aggregate, select
from bpm.dmn.results import DecisionResult, EvaluatedInput, MatchedRule
from bpm.dmn.typeref import convert
from bpm.errors import DecisionFailed

if TYPE_CHECKING:
    from bpm.dmn.model import Decision, DecisionTable, LiteralExpression, Rule


def evaluate_decision(
    decision: Decision, variables: Mapping[str, Any], *, require_match: bool = False
) -> DecisionResult:
    order = _dependency_order(decision)
    if len(order) == 1:
        result = decision.logic.run(decision.key, variables)
    else:
        values = dict(variables)
        required: list[DecisionResult] = []
        for needed in order[:-1]:
            needed_result = needed.logic.run(needed.key, values)
            _add_to_variables(needed_result, values)
            required.append(needed_result)
        result = replace(decision.logic.run(decision.key, values), required=tuple(required))
    if require_match and not result.rules:
        raise _failed(decision.key, result.inputs, "no rule matched")
    return result


def evaluate_table(
    table: DecisionTable, decision: str, variables: Mapping[str, Any]
) -> DecisionResult:
    scope = Scope(variables)
    inputs: list[EvaluatedInput] = []
    matching = list(table.rules)
    for column, column_input in enumerate(table.inputs):
        try:
            value = convert(column_input.type_ref, column_input.expression.evaluate(scope))
        except FeelError as exc:
            where = f"input '{_label(column_input.label, column_input.id)}'"
            raise _failed(
                decision, inputs, f"{where} ({column_input.expression_text!r}): {exc}"
            ) from None
        inputs.append(
            EvaluatedInput(column_input.id, column_input.label, column_input.expression_text, value)
        )
        local = scope.with_input(column_input.input_variable, value)
        still: list[Rule] = []
        for rule in matching:
            try:
                passed = rule.conditions[column].test(value, local) is True
            except FeelError as exc:
                text = rule.condition_texts[column] if rule.condition_texts else ""
                raise _failed(
                    decision,
                    inputs,
                    f"rule '{rule.id}' (row {rule.row}), input entry {text!r} of input "
                    f"'{_label(column_input.label, column_input.id)}': {exc}",
                ) from None
            if passed:
                still.append(rule)
        matching = still
    matched = [_outputs(table, rule, scope, decision, inputs) for rule in matching]
    policy = table.hit_policy
    try:
        if table.aggregation is not None:
            total = aggregate(table.aggregation, matched)
            return DecisionResult(
                decision,
                tuple(matched),
                tuple(inputs),
                policy.value,
                table.aggregation.value,
                total,
                table.outputs[0].name,
            )
        priorities = (
            [(o.name, o.values) for o in table.outputs if o.values]
            if policy in BY_OUTPUT_VALUES
            else []
        )
        kept = select(policy, matched, priorities)
    except FeelError as exc:
        raise _failed(decision, inputs, str(exc)) from None
    return DecisionResult(decision, kept, tuple(inputs), policy.value)


def evaluate_literal(
    literal: LiteralExpression, decision: str, variables: Mapping[str, Any]
) -> DecisionResult:
    try:
        value = convert(literal.type_ref, literal.expression.evaluate(Scope(variables)))
    except FeelError as exc:
        raise _failed(
            decision, [], f"literal expression {literal.expression_text!r}: {exc}"
        ) from None
    return DecisionResult(decision, (MatchedRule(literal.id, 0, {literal.variable: value}),), ())


def _outputs(
    table: DecisionTable,
    rule: Rule,
    scope: Scope,
    decision: str,
    inputs: list[EvaluatedInput],
) -> MatchedRule:
    values: dict[str, Any] = {}
    for column, output in enumerate(table.outputs):
        expression = rule.conclusions[column]
        if expression is None:
            continue  # an empty output entry gives no value: the output is left out
        try:
            values[output.name] = convert(output.type_ref, expression.evaluate(scope))
        except FeelError as exc:
            text = rule.conclusion_texts[column] if rule.conclusion_texts else ""
            raise _failed(
                decision,
                inputs,
                f"rule '{rule.id}' (row {rule.row}), output entry {text!r} of output "
                f"'{output.name}': {exc}",
            ) from None
    return MatchedRule(rule.id, rule.row, values)


def _dependency_order(decision: Decision) -> list[Decision]:
    """Required decisions before the decisions needing them, each once (the reader refused
    cycles, so this ends)."""
    order: list[Decision] = []
    seen: set[str] = set()
    stack: list[tuple[Decision, int]] = [(decision, 0)]
    while stack:
        current, index = stack.pop()
        if index < len(current.required):
            stack.append((current, index + 1))
            needed = current.required[index]
            if needed.key not in seen:
                stack.append((needed, 0))
        elif current.key not in seen:
            seen.add(current.key)
            order.append(current)
    return order


def _add_to_variables(result: DecisionResult, values: dict[str, Any]) -> None:
    """A required decision's result as variables: a single result's entries by name; for
    several results (or a multi-result hit policy) each output name holds the list of values."""
    entries = result.entries
    if not entries:
        return
    several = result.aggregation is None and result.hit_policy in MULTIPLE
    if len(entries) == 1 and not several:
        values.update(entries[0])
        return
    names = dict.fromkeys(name for entry in entries for name in entry)
    for name in names:
        values[name] = [entry[name] for entry in entries if name in entry]


def _label(label: str, fallback: str) -> str:
    return label or fallback


def _failed(
    decision: str, inputs: list[EvaluatedInput] | tuple[EvaluatedInput, ...], why: str
) -> DecisionFailed:
    shown = ", ".join(f"{_label(i.expression, i.input_id)}={show(i.value, 40)}" for i in inputs)
    return DecisionFailed(
        f"decision '{decision}': {why}" + (f" (inputs: {shown})" if shown else ""),
        decision,
        {i.input_id: i.value for i in inputs},
    )
