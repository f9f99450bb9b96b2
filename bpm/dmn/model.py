"""A DMN file once read: decisions by key, each a decision table or a literal expression, with
every cell already parsed. Everything here is immutable, so one parsed file can be shared by
any number of evaluations at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bpm.dmn.evaluate import evaluate_decision, evaluate_literal, evaluate_table
from bpm.dmn.feel_ast import Expr, UnaryTest
from bpm.dmn.hit_policies import Aggregation, HitPolicy
from bpm.dmn.results import DecisionResult
from bpm.errors import InvalidDefinition

#: The name an input entry uses for its column's value when ``camunda:inputVariable`` is unset.
DEFAULT_INPUT_VARIABLE = "cellInput"


@dataclass(frozen=True)
class Input:
    """An input column: the expression evaluated once per evaluation, converted to
    ``type_ref``, then tested by each rule's entry under the name ``input_variable``."""

    id: str
    label: str
    expression_text: str
    expression: Expr = field(repr=False, compare=False)
    type_ref: str | None = None
    input_variable: str = DEFAULT_INPUT_VARIABLE


@dataclass(frozen=True)
class Output:
    """An output column; ``name`` keys its value in a rule's outputs, ``values`` are its
    ``outputValues`` (highest priority first, for PRIORITY and OUTPUT ORDER)."""

    id: str
    label: str
    name: str
    type_ref: str | None = None
    values: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Rule:
    """A row: one unary test per input, one expression (``None`` when empty) per output."""

    id: str
    row: int
    description: str
    conditions: tuple[UnaryTest, ...] = field(repr=False, compare=False)
    conclusions: tuple[Expr | None, ...] = field(repr=False, compare=False)
    condition_texts: tuple[str, ...] = ()
    conclusion_texts: tuple[str, ...] = ()


@dataclass(frozen=True)
class DecisionTable:
    id: str
    hit_policy: HitPolicy
    aggregation: Aggregation | None
    inputs: tuple[Input, ...]
    outputs: tuple[Output, ...]
    rules: tuple[Rule, ...] = field(repr=False)

    def run(self, decision: str, variables: Mapping[str, Any]) -> DecisionResult:
        return evaluate_table(self, decision, variables)


@dataclass(frozen=True)
class LiteralExpression:
    """A decision whose logic is one expression; its result is ``{variable: value}``."""

    id: str
    variable: str
    expression_text: str
    expression: Expr = field(repr=False, compare=False)
    type_ref: str | None = None

    def run(self, decision: str, variables: Mapping[str, Any]) -> DecisionResult:
        return evaluate_literal(self, decision, variables)


@dataclass(frozen=True)
class Decision:
    """A decision, keyed by its ``id`` as Camunda keys decision definitions."""

    key: str
    name: str
    line: int
    logic: DecisionTable | LiteralExpression = field(repr=False)
    #: The decisions this one requires (DRD), evaluated first; their results become variables.
    required: tuple[Decision, ...] = field(default=(), repr=False, compare=False)
    version_tag: str | None = None
    history_time_to_live: str | None = None

    def evaluate(
        self, variables: Mapping[str, Any], *, require_match: bool = False
    ) -> DecisionResult:
        """Evaluate over ``variables``. No matching rule gives an empty result, as in Camunda,
        unless ``require_match`` makes it a ``DecisionFailed``; so do a broken hit policy, a
        missing variable and a value of the wrong type."""
        return evaluate_decision(self, variables, require_match=require_match)


@dataclass(frozen=True)
class DmnFile:
    """The decisions of one file, by key, in file order."""

    id: str
    name: str
    namespace: str
    dmn_version: str
    decisions: Mapping[str, Decision] = field(repr=False)

    def decision(self, key: str) -> Decision:
        """The decision with ``key``; ``InvalidDefinition`` names the keys there are."""
        try:
            return self.decisions[key]
        except KeyError:
            known = ", ".join(repr(k) for k in list(self.decisions)[:20]) or "none"
            raise InvalidDefinition(
                f"the DMN file has no decision {key!r} (decisions: {known})", key
            ) from None
