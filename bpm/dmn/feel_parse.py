"""A recursive-descent parser for the FEEL subset of decision tables: simple expressions (input
expressions, output entries, literal expressions) and simple unary tests (input entries).

Anything outside the subset is a ``FeelSyntaxError`` that names the construct, so a table that
Camunda would evaluate but this package cannot is refused when the file is read, never
half-evaluated later."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bpm.dmn.feel_ast import (
    INPUT_REF,
    AnyOf,
    AnyValue,
    Arithmetic,
    Call,
    CompareTo,
    Comparison,
    EqualTo,
    Expr,
    Holds,
    InputValue,
    Interval,
    Literal,
    Logic,
    Name,
    Negate,
    NoneOf,
    Path,
    UnaryTest,
)
from bpm.dmn.feel_lex import FeelSyntaxError, Token, tokenize
from bpm.dmn.feel_values import FeelError, call
from bpm.dmn.limits import MAX_NESTING

_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
_FUNCTIONS = ("date", "date and time", "time", "not")
#: FEEL keywords of constructs outside the subset.
_UNSUPPORTED = frozenset(
    {
        "if",
        "then",
        "else",
        "for",
        "in",
        "return",
        "some",
        "every",
        "satisfies",
        "instance",
        "of",
        "function",
        "between",
        "external",
    }
)
_KEYWORDS = {"true": True, "false": False, "null": None}


def parse_expression(source: str) -> Expr:
    """A FEEL simple expression: literals, names, ``a.b``, ``+ - * /``, comparisons,
    ``and``/``or``, ``not()``, ``date()``, ``date and time()``, ``time()``."""
    parser = _Parser(source, allow_input=False)
    if parser.peek().kind == "end":
        raise FeelSyntaxError("the expression is empty")
    expr = parser.expression()
    parser.expect_end()
    return expr


def parse_unary_tests(source: str, input_name: str | None) -> UnaryTest:
    """FEEL simple unary tests; ``input_name`` is the input variable (``cellInput``) that, like
    ``?``, turns an entry into a boolean condition instead of a value to compare with."""
    if source.strip() in ("", "-"):
        return AnyValue()
    parser = _Parser(source, allow_input=True)
    first = parser.peek()
    if first.kind == "func" and first.value == "not":
        parser.advance()
        parser.expect("(")
        with parser.nested():
            tests = parser.tests(input_name)
        parser.expect(")")
        parser.expect_end()
        return NoneOf(AnyOf(tests))
    tests = parser.tests(input_name)
    parser.expect_end()
    return tests[0] if len(tests) == 1 else AnyOf(tests)


def parse_values(source: str) -> tuple[Any, ...]:
    """A list of literal values (``"low","medium","high"``), as in ``outputValues``."""
    tests = parse_unary_tests(source, None)
    parts = tests.tests if isinstance(tests, AnyOf) else (tests,)
    values: list[Any] = []
    for part in parts:
        if not (isinstance(part, EqualTo) and isinstance(part.expected, Literal)):
            raise FeelSyntaxError('the list of values may only hold literals, like "a", 5')
        values.append(part.expected.value)
    return tuple(values)


class _Parser:
    def __init__(self, source: str, allow_input: bool) -> None:
        self.tokens = tokenize(source)
        self.index = 0
        self.depth = 0
        self.allow_input = allow_input

    # --- token access ----------------------------------------------------------------------

    def peek(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        if token.kind != "end":
            self.index += 1
        return token

    def at(self, *ops: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.text in ops

    def at_word(self, word: str) -> bool:
        token = self.peek()
        return token.kind == "name" and token.text == word

    def expect(self, op: str) -> Token:
        if not self.at(op):
            raise self.unexpected(f"'{op}'")
        return self.advance()

    def expect_end(self) -> None:
        if self.peek().kind != "end":
            raise self.unexpected("the end of the expression")

    def unexpected(self, wanted: str) -> FeelSyntaxError:
        token = self.peek()
        if token.kind == "end":
            return FeelSyntaxError(f"the expression ends where {wanted} was expected")
        if token.kind in ("name", "func") and token.value in _UNSUPPORTED:
            return FeelSyntaxError(
                f"FEEL '{token.value}' (column {token.pos + 1}) is not supported"
            )
        return FeelSyntaxError(
            f"unexpected {token.text!r} at column {token.pos + 1}; expected {wanted}"
        )

    @contextmanager
    def nested(self) -> Iterator[None]:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise FeelSyntaxError(f"the expression is nested deeper than {MAX_NESTING} levels")
        try:
            yield
        finally:
            self.depth -= 1

    # --- unary tests -----------------------------------------------------------------------

    def tests(self, input_name: str | None) -> tuple[UnaryTest, ...]:
        tests = [self.positive_test(input_name)]
        while self.at(","):
            self.advance()
            tests.append(self.positive_test(input_name))
        return tuple(tests)

    def positive_test(self, input_name: str | None) -> UnaryTest:
        if self.at("<", "<=", ">", ">="):
            op = self.advance().text
            return CompareTo(op, self.additive())
        if self.at("[", "(", "]"):
            start = self.index
            opening = self.advance().text
            with self.nested():
                low = self.additive()
                if opening == "(" and not self.at(".."):
                    self.index = start  # a parenthesised expression, not a range
                    return self.expression_test(input_name)
                self.expect("..")
                high = self.additive()
            if not self.at("]", ")", "["):
                raise self.unexpected("']', ')' or '[' to close the range")
            closing = self.advance().text
            return Interval(low, opening == "[", high, closing == "]")
        if self.at("-"):
            following = self.tokens[self.index + 1]
            if following.kind == "end" or (following.kind == "op" and following.text == ","):
                raise FeelSyntaxError("'-' (any value) must be the whole input entry")
        return self.expression_test(input_name)

    def expression_test(self, input_name: str | None) -> UnaryTest:
        expr = self.expression()
        if any(ref in (INPUT_REF, input_name) for ref in expr.refs()):
            return Holds(expr)
        return EqualTo(expr)

    # --- expressions -----------------------------------------------------------------------

    def expression(self) -> Expr:
        return self.logic("or", self.conjunction)

    def conjunction(self) -> Expr:
        return self.logic("and", self.comparison)

    def logic(self, word: str, operand: Any) -> Expr:
        operands: list[Expr] = [operand()]
        while self.at_word(word):
            self.advance()
            operands.append(operand())
        return operands[0] if len(operands) == 1 else Logic(word, tuple(operands))

    def comparison(self) -> Expr:
        left = self.additive()
        if not self.at(*_COMPARISONS):
            if self.peek().kind in ("name", "func") and self.peek().value in _UNSUPPORTED:
                raise self.unexpected("an operator")
            return left
        op = self.advance().text
        right = self.additive()
        if self.at(*_COMPARISONS):
            raise FeelSyntaxError(
                f"comparisons cannot be chained (column {self.peek().pos + 1}); "
                f"join them with 'and'"
            )
        return Comparison(left, op, right)

    def additive(self) -> Expr:
        return self.chain(("+", "-"), self.multiplicative)

    def multiplicative(self) -> Expr:
        return self.chain(("*", "/"), self.unary)

    def chain(self, ops: tuple[str, ...], operand: Any) -> Expr:
        first: Expr = operand()
        rest: list[tuple[str, Expr]] = []
        while self.at(*ops):
            op = self.advance().text
            rest.append((op, operand()))
        return Arithmetic(first, tuple(rest)) if rest else first

    def unary(self) -> Expr:
        if not self.at("-"):
            return self.postfix()
        self.advance()
        with self.nested():
            operand = self.unary()
        if isinstance(operand, Literal) and isinstance(operand.value, int | float):
            if not isinstance(operand.value, bool):
                return Literal(-operand.value)
        return Negate(operand)

    def postfix(self) -> Expr:
        base = self.primary()
        names: list[str] = []
        while self.at("."):
            self.advance()
            token = self.peek()
            if token.kind != "name":
                raise self.unexpected("a name after '.'")
            names.append(self.advance().value)
        return Path(base, tuple(names)) if names else base

    def primary(self) -> Expr:
        token = self.peek()
        if token.kind == "num":
            self.advance()
            return Literal(float(token.value) if "." in token.value else int(token.value))
        if token.kind == "str":
            self.advance()
            return Literal(token.value)
        if token.kind == "name":
            return self.name()
        if token.kind == "func":
            return self.function_call()
        if self.at("?"):
            if not self.allow_input:
                raise FeelSyntaxError("'?' (the input value) is only allowed in input entries")
            self.advance()
            return InputValue()
        if self.at("("):
            self.advance()
            with self.nested():
                inner = self.expression()
            self.expect(")")
            return inner
        if self.at("["):
            raise FeelSyntaxError(
                f"'[' at column {token.pos + 1}: lists and ranges are only allowed as input entries"
            )
        raise self.unexpected("a value")

    def name(self) -> Expr:
        token = self.advance()
        if token.text in _KEYWORDS:
            return Literal(_KEYWORDS[token.text])
        if token.text in _UNSUPPORTED or token.text in ("and", "or", "not"):
            self.index -= 1
            raise self.unexpected("a value")
        return Name(token.value)

    def function_call(self) -> Expr:
        token = self.advance()
        if token.value in _UNSUPPORTED:
            raise FeelSyntaxError(f"FEEL '{token.value}' (column {token.pos + 1}) is not supported")
        if token.value not in _FUNCTIONS:
            raise FeelSyntaxError(
                f"function '{token.value}' (column {token.pos + 1}) is not supported; "
                f"only {', '.join(_FUNCTIONS)} are"
            )
        self.expect("(")
        with self.nested():
            argument = self.expression()
        if self.at(","):
            raise FeelSyntaxError(f"{token.value}() takes one argument")
        self.expect(")")
        if isinstance(argument, Literal):
            try:
                return Literal(call(token.value, argument.value))
            except FeelError as exc:
                raise FeelSyntaxError(str(exc)) from None
        return Call(token.value, argument)
