"""Reading one ``<decisionTable>``: hit policy, input and output columns, rules, each cell
compiled. Problems are collected, not raised, so a file with ten broken cells is refused once
with all ten listed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from bpm.definitions.bpmn_xml import XmlElement
from bpm.dmn.feel_ast import (
    AnyOf,
    CompareTo,
    EqualTo,
    Expr,
    Interval,
    Literal,
    NoneOf,
    UnaryTest,
)
from bpm.dmn.feel_lex import FeelSyntaxError
from bpm.dmn.feel_parse import parse_values
from bpm.dmn.feel_values import FeelError, kind, show
from bpm.dmn.hit_policies import BY_OUTPUT_VALUES, Aggregation, HitPolicy
from bpm.dmn.limits import MAX_INPUTS, MAX_OUTPUTS, MAX_RULES
from bpm.dmn.model import DEFAULT_INPUT_VARIABLE, DecisionTable, Input, Output, Rule
from bpm.dmn.reader_cells import (
    Problems,
    compile_expression,
    compile_tests,
    describe,
    language,
    text_of,
)
from bpm.dmn.typeref import KNOWN, convert, literal_fits, normalise

CAMUNDA_NS = "http://camunda.org/schema/1.0/dmn"
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class TableReader:
    """Reads the tables of one file: its DMN namespace, default language and problem list."""

    def __init__(self, ns: str, default_language: str | None, problems: Problems) -> None:
        self.ns = ns
        self.default_language = default_language
        self.problems = problems

    def children(self, element: XmlElement, tag: str) -> list[XmlElement]:
        return [c for c in element.children if c.ns == self.ns and c.tag == tag]

    def read(self, table: XmlElement, decision: str) -> DecisionTable | None:
        where = describe(table, decision)
        before = len(self.problems.items)
        policy, aggregation = self._hit_policy(table, where)
        input_elements = self.children(table, "input")
        output_elements = self.children(table, "output")
        rule_elements = self.children(table, "rule")
        for what, found, limit in (
            ("inputs", input_elements, MAX_INPUTS),
            ("outputs", output_elements, MAX_OUTPUTS),
            ("rules", rule_elements, MAX_RULES),
        ):
            if len(found) > limit:
                self.problems.add(
                    table, where, f"{len(found)} {what}; at most {limit} are accepted"
                )
                return None
        if not output_elements:
            self.problems.add(table, where, "a decision table needs at least one output")
        inputs = [self._input(e, decision, i) for i, e in enumerate(input_elements, 1)]
        outputs = [self._output(e, decision, i) for i, e in enumerate(output_elements, 1)]
        self._check_outputs(table, decision, output_elements, outputs, policy, aggregation)
        rules = [
            self._rule(e, decision, row, inputs, outputs) for row, e in enumerate(rule_elements, 1)
        ]
        if len(self.problems.items) > before or self.problems.dropped:
            return None
        return DecisionTable(
            table.attrib.get("id", ""),
            policy,
            aggregation,
            tuple(i for i in inputs if i is not None),
            tuple(o for o in outputs if o is not None),
            tuple(r for r in rules if r is not None),
        )

    def _hit_policy(self, table: XmlElement, where: str) -> tuple[HitPolicy, Aggregation | None]:
        text = table.attrib.get("hitPolicy", "UNIQUE").strip() or "UNIQUE"
        try:
            policy = HitPolicy(text)
        except ValueError:
            names = ", ".join(p.value for p in HitPolicy)
            self.problems.add(table, where, f"hitPolicy {text!r} is not one of {names}")
            policy = HitPolicy.UNIQUE
        found = table.attrib.get("aggregation")
        if found is None or not found.strip():
            return policy, None
        try:
            aggregation = Aggregation(found.strip())
        except ValueError:
            self.problems.add(table, where, f"aggregation {found!r} is not SUM, MIN, MAX or COUNT")
            return policy, None
        if policy is not HitPolicy.COLLECT:
            self.problems.add(
                table,
                where,
                f"aggregation {found} only applies to hit policy COLLECT, not {policy}",
            )
        return policy, aggregation

    def _input(self, element: XmlElement, decision: str, index: int) -> Input | None:
        where = describe(element, decision, index)
        ident = element.attrib.get("id")
        if not ident:
            self.problems.add(element, where, "an input needs an id")
        variable = element.attrib.get(f"{{{CAMUNDA_NS}}}inputVariable", "").strip()
        variable = variable or DEFAULT_INPUT_VARIABLE
        if not _VARIABLE_NAME.fullmatch(variable):
            self.problems.add(element, where, f"camunda:inputVariable {variable!r} is not a name")
        expression_element = element.find(self.ns, "inputExpression")
        if expression_element is None:
            self.problems.add(element, where, "the input has no inputExpression")
            return None
        source = text_of(expression_element, self.ns)
        where_expr = describe(expression_element, decision, index)
        type_ref = normalise(expression_element.attrib.get("typeRef"))
        # An empty input expression is null: every entry of the column tests null.
        expr = (
            self._compile(expression_element, where_expr, source)
            if source.strip()
            else Literal(None)
        )
        if expr is None or not ident:
            return None
        label = element.attrib.get("label", "")
        return Input(ident, label, source.strip(), expr, type_ref, variable)

    def _output(self, element: XmlElement, decision: str, index: int) -> Output | None:
        where = describe(element, decision, index)
        ident = element.attrib.get("id")
        if not ident:
            self.problems.add(element, where, "an output needs an id")
            return None
        type_ref = normalise(element.attrib.get("typeRef"))
        values: tuple[Any, ...] = ()
        values_element = element.find(self.ns, "outputValues")
        if values_element is not None and text_of(values_element, self.ns).strip():
            try:
                values = tuple(
                    convert(type_ref, v) for v in parse_values(text_of(values_element, self.ns))
                )
            except (FeelSyntaxError, FeelError) as exc:
                self.problems.add(values_element, describe(values_element, decision), str(exc))
        name = element.attrib.get("name", "").strip()
        return Output(ident, element.attrib.get("label", ""), name, type_ref, values)

    def _check_outputs(
        self,
        table: XmlElement,
        decision: str,
        elements: list[XmlElement],
        outputs: list[Output | None],
        policy: HitPolicy,
        aggregation: Aggregation | None,
    ) -> None:
        if len(outputs) == 1 and outputs[0] is not None and not outputs[0].name:
            # A single unnamed output is keyed by its id.
            outputs[0] = Output(
                outputs[0].id,
                outputs[0].label,
                outputs[0].id,
                outputs[0].type_ref,
                outputs[0].values,
            )
        where = describe(table, decision)
        seen: set[str] = set()
        for element, output in zip(elements, outputs, strict=True):
            if output is None or len(outputs) == 1:
                continue
            if not output.name:
                self.problems.add(
                    element, describe(element, decision), "each of several outputs needs a name"
                )
            elif output.name in seen:
                self.problems.add(
                    element, describe(element, decision), f"a second output named {output.name!r}"
                )
            seen.add(output.name)
        if aggregation is not None and len(outputs) != 1:
            self.problems.add(
                table, where, f"COLLECT with aggregation {aggregation} needs exactly one output"
            )
        if policy in BY_OUTPUT_VALUES and not any(o is not None and o.values for o in outputs):
            self.problems.add(
                table,
                where,
                f"hit policy {policy} orders rules by an output's outputValues, but no "
                f"output lists its values",
            )

    def _rule(
        self,
        element: XmlElement,
        decision: str,
        row: int,
        inputs: list[Input | None],
        outputs: list[Output | None],
    ) -> Rule | None:
        where = describe(element, decision, row)
        ident = element.attrib.get("id")
        if not ident:
            self.problems.add(element, where, "a rule needs an id")
        entries = self.children(element, "inputEntry")
        conclusions = self.children(element, "outputEntry")
        if len(entries) != len(inputs) or len(conclusions) != len(outputs):
            self.problems.add(
                element,
                where,
                f"the rule has {len(entries)} input entries and {len(conclusions)} output "
                f"entries, but the table has {len(inputs)} inputs and {len(outputs)} outputs",
            )
            return None
        tests = [
            self._entry(e, decision, i, c)
            for i, (e, c) in enumerate(zip(entries, inputs, strict=True), 1)
        ]
        results = [
            self._conclusion(e, decision, i, o)
            for i, (e, o) in enumerate(zip(conclusions, outputs, strict=True), 1)
        ]
        description = self.children(element, "description")
        if not ident or any(t is None for t in tests) or any(r is False for r in results):
            return None
        return Rule(
            ident,
            row,
            description[0].text.strip() if description else "",
            tuple(t for t in tests if t is not None),
            tuple(r if isinstance(r, Expr) else None for r in results),
            tuple(text_of(e, self.ns).strip() for e in entries),
            tuple(text_of(e, self.ns).strip() for e in conclusions),
        )

    def _entry(
        self, element: XmlElement, decision: str, index: int, column: Input | None
    ) -> UnaryTest | None:
        where = describe(element, decision, index)
        source = text_of(element, self.ns)
        variable = column.input_variable if column is not None else DEFAULT_INPUT_VARIABLE
        try:
            test = compile_tests(source, language(element, self.default_language), variable)
        except FeelSyntaxError as exc:
            self.problems.add(element, where, f"{exc} (in {source.strip()[:80]!r})")
            return None
        if column is not None and column.type_ref in KNOWN:
            for value in _literals(test):
                if not literal_fits(column.type_ref, value):
                    self.problems.add(
                        element,
                        where,
                        f"{show(value)} is a {kind(value)}, but input "
                        f"'{column.label or column.id}' has typeRef {column.type_ref}",
                    )
                    return None
        return test

    def _conclusion(
        self, element: XmlElement, decision: str, index: int, column: Output | None
    ) -> Expr | bool | None:
        """The compiled entry, ``None`` for an empty one, ``False`` when it is broken."""
        source = text_of(element, self.ns)
        if not source.strip():
            return None
        where = describe(element, decision, index)
        expr = self._compile(element, where, source)
        if expr is None:
            return False
        if isinstance(expr, Literal) and column is not None:
            try:
                convert(column.type_ref, expr.value)
            except FeelError as exc:
                self.problems.add(element, where, f"{exc} (output '{column.name}')")
                return False
        return expr

    def _compile(self, element: XmlElement, where: str, source: str) -> Expr | None:
        try:
            return compile_expression(source, language(element, self.default_language))
        except FeelSyntaxError as exc:
            self.problems.add(element, where, f"{exc} (in {source.strip()[:80]!r})")
            return None


def _literals(test: UnaryTest) -> Iterator[Any]:
    """The literal values a test compares the input with directly."""
    if isinstance(test, AnyOf):
        for one in test.tests:
            yield from _literals(one)
    elif isinstance(test, NoneOf):
        yield from _literals(test.tests)
    elif isinstance(test, CompareTo | EqualTo):
        operand = test.endpoint if isinstance(test, CompareTo) else test.expected
        if isinstance(operand, Literal):
            yield operand.value
    elif isinstance(test, Interval):
        for end in (test.low, test.high):
            if isinstance(end, Literal):
                yield end.value
