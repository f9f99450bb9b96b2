"""DMN decision tables, evaluated as Camunda 7 evaluates them, without running any code.

``parse_dmn`` reads a DMN 1.1 to 1.5 file into a ``DmnFile`` (its decisions by key);
``Decision.evaluate`` gives a ``DecisionResult``; ``map_result`` shapes it as a business rule
task's ``camunda:mapDecisionResult`` does. See docs/dmn.md for the FEEL subset supported."""

from bpm.dmn.hit_policies import Aggregation, HitPolicy
from bpm.dmn.model import (
    Decision,
    DecisionTable,
    DmnFile,
    Input,
    LiteralExpression,
    Output,
    Rule,
)
from bpm.dmn.reader import parse_dmn
from bpm.dmn.results import (
    DecisionResult,
    EvaluatedInput,
    MatchedRule,
    ResultMode,
    map_result,
    result_mode,
)

__all__ = [
    "Aggregation",
    "Decision",
    "DecisionResult",
    "DecisionTable",
    "DmnFile",
    "EvaluatedInput",
    "HitPolicy",
    "Input",
    "LiteralExpression",
    "MatchedRule",
    "Output",
    "ResultMode",
    "Rule",
    "map_result",
    "parse_dmn",
    "result_mode",
]
