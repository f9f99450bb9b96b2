"""The parsed form of FEEL expressions and unary tests. Each node can only read variables and
apply the value rules of ``feel_values``: there is no node that calls a Python callable, looks
up an attribute or imports anything, so no text can make evaluation run code."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bpm.dmn.feel_values import FeelError, arithmetic, call, compare, equal, kind, negate, show

#: The name ``?`` stands for in ``refs()``: the value of the input column under test.
INPUT_REF = "?"


class Scope:
    """What an expression can see: the caller's variables and, inside an input entry, the
    input value under its input variable name (``cellInput`` by default) and as ``?``."""

    __slots__ = ("_has_input", "_input_name", "_input_value", "_variables")

    def __init__(
        self,
        variables: Mapping[str, Any],
        input_name: str | None = None,
        input_value: Any = None,
    ) -> None:
        self._variables = variables
        self._input_name = input_name
        self._input_value = input_value
        self._has_input = input_name is not None

    def lookup(self, name: str) -> Any:
        if self._has_input and name == self._input_name:
            return self._input_value
        try:
            return self._variables[name]
        except KeyError:
            raise FeelError(f"variable '{name}' is not set") from None

    def input_value(self) -> Any:
        if not self._has_input:
            raise FeelError("'?' means the input value and only exists in input entries")
        return self._input_value

    def with_input(self, name: str, value: Any) -> Scope:
        return Scope(self._variables, name, value)


# --- expressions ---------------------------------------------------------------------------


class Expr(ABC):
    """A FEEL simple expression."""

    @abstractmethod
    def evaluate(self, scope: Scope) -> Any:
        """The expression's value over ``scope``."""

    def refs(self) -> Iterator[str]:
        """The variable names the expression reads (``?`` for the input value)."""
        return iter(())


@dataclass(frozen=True)
class Literal(Expr):
    value: Any

    def evaluate(self, scope: Scope) -> Any:
        return self.value


@dataclass(frozen=True)
class Name(Expr):
    name: str

    def evaluate(self, scope: Scope) -> Any:
        return scope.lookup(self.name)

    def refs(self) -> Iterator[str]:
        yield self.name


@dataclass(frozen=True)
class InputValue(Expr):
    def evaluate(self, scope: Scope) -> Any:
        return scope.input_value()

    def refs(self) -> Iterator[str]:
        yield INPUT_REF


@dataclass(frozen=True)
class Path(Expr):
    """``base.a.b``: entries of a context (a dict), read one after the other."""

    base: Expr
    names: tuple[str, ...]

    def evaluate(self, scope: Scope) -> Any:
        value = self.base.evaluate(scope)
        for name in self.names:
            if value is None:
                return None
            if not isinstance(value, dict):
                raise FeelError(f"cannot read '.{name}' of {show(value)} ({kind(value)})")
            if name not in value:
                raise FeelError(f"the context has no entry '{name}' (it has {_keys(value)})")
            value = value[name]
        return value

    def refs(self) -> Iterator[str]:
        return self.base.refs()


def _keys(value: dict[Any, Any]) -> str:
    names = ", ".join(str(k) for k in list(value)[:10])
    return names + (", ..." if len(value) > 10 else "") if names else "no entries"


@dataclass(frozen=True)
class Negate(Expr):
    operand: Expr

    def evaluate(self, scope: Scope) -> Any:
        return negate(self.operand.evaluate(scope))

    def refs(self) -> Iterator[str]:
        return self.operand.refs()


@dataclass(frozen=True)
class Arithmetic(Expr):
    """``a + b - c`` or ``a * b / c``: one precedence level, applied left to right."""

    first: Expr
    rest: tuple[tuple[str, Expr], ...]

    def evaluate(self, scope: Scope) -> Any:
        value = self.first.evaluate(scope)
        for op, operand in self.rest:
            value = arithmetic(op, value, operand.evaluate(scope))
        return value

    def refs(self) -> Iterator[str]:
        yield from self.first.refs()
        for _, operand in self.rest:
            yield from operand.refs()


@dataclass(frozen=True)
class Comparison(Expr):
    left: Expr
    op: str
    right: Expr

    def evaluate(self, scope: Scope) -> Any:
        return apply_comparison(self.op, self.left.evaluate(scope), self.right.evaluate(scope))

    def refs(self) -> Iterator[str]:
        yield from self.left.refs()
        yield from self.right.refs()


def apply_comparison(op: str, left: Any, right: Any) -> bool | None:
    if op == "=":
        return equal(left, right)
    if op == "!=":
        return not equal(left, right)
    order = compare(left, right)
    if order is None:
        return None
    return {"<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0}[op]


@dataclass(frozen=True)
class Logic(Expr):
    """``a and b and c`` / ``a or b``, with FEEL's three-valued logic over null."""

    op: str
    operands: tuple[Expr, ...]

    def evaluate(self, scope: Scope) -> Any:
        decisive = self.op == "or"
        unknown = False
        for operand in self.operands:
            value = operand.evaluate(scope)
            if value is None:
                unknown = True
            elif not isinstance(value, bool):
                raise FeelError(f"'{self.op}' needs booleans, not {show(value)} ({kind(value)})")
            elif value is decisive:
                return decisive
        return None if unknown else not decisive

    def refs(self) -> Iterator[str]:
        for operand in self.operands:
            yield from operand.refs()


@dataclass(frozen=True)
class Call(Expr):
    function: str
    argument: Expr

    def evaluate(self, scope: Scope) -> Any:
        return call(self.function, self.argument.evaluate(scope))

    def refs(self) -> Iterator[str]:
        return self.argument.refs()


# --- unary tests ---------------------------------------------------------------------------


class UnaryTest(ABC):
    """One input entry: does the input value pass? ``None`` is FEEL's null (no match)."""

    @abstractmethod
    def test(self, value: Any, scope: Scope) -> bool | None:
        """Whether ``value`` passes."""

    def refs(self) -> Iterator[str]:
        return iter(())


@dataclass(frozen=True)
class AnyValue(UnaryTest):
    """``-`` or an empty cell."""

    def test(self, value: Any, scope: Scope) -> bool | None:
        return True


@dataclass(frozen=True)
class CompareTo(UnaryTest):
    """``< 10``, ``>= limit``: the input value on the left."""

    op: str
    endpoint: Expr

    def test(self, value: Any, scope: Scope) -> bool | None:
        return apply_comparison(self.op, value, self.endpoint.evaluate(scope))

    def refs(self) -> Iterator[str]:
        return self.endpoint.refs()


@dataclass(frozen=True)
class Interval(UnaryTest):
    """``[1..10]``, ``]1..10[``, ``(1..10)``, ``[1..10)``: closed ends include the endpoint."""

    low: Expr
    low_closed: bool
    high: Expr
    high_closed: bool

    def test(self, value: Any, scope: Scope) -> bool | None:
        above = compare(value, self.low.evaluate(scope))
        below = compare(value, self.high.evaluate(scope))
        if above is None or below is None:
            return None
        return (above > 0 or (self.low_closed and above == 0)) and (
            below < 0 or (self.high_closed and below == 0)
        )

    def refs(self) -> Iterator[str]:
        yield from self.low.refs()
        yield from self.high.refs()


@dataclass(frozen=True)
class EqualTo(UnaryTest):
    """A value: ``"Fall"``, ``5``, ``date("2020-01-01")``, ``null``, ``limit``. A list (a
    variable holding one) passes the values it contains; a condition on other variables
    (``order.total > 100``) passes a non-boolean, non-null input when it is true, as in
    Camunda."""

    expected: Expr

    def test(self, value: Any, scope: Scope) -> bool | None:
        expected = self.expected.evaluate(scope)
        if isinstance(expected, bool) and value is not None and not isinstance(value, bool):
            return expected
        if isinstance(expected, list | tuple) and not isinstance(value, list | tuple):
            return any(equal(value, item) for item in expected)
        return equal(value, expected)

    def refs(self) -> Iterator[str]:
        return self.expected.refs()


@dataclass(frozen=True)
class Holds(UnaryTest):
    """A boolean expression that names the input itself: ``? > 5 and ? < 10``."""

    condition: Expr

    def test(self, value: Any, scope: Scope) -> bool | None:
        result = self.condition.evaluate(scope)
        if result is not None and not isinstance(result, bool):
            raise FeelError(
                f"an input entry that uses the input value must be true or false, "
                f"not {show(result)} ({kind(result)})"
            )
        return result

    def refs(self) -> Iterator[str]:
        return self.condition.refs()


@dataclass(frozen=True)
class AnyOf(UnaryTest):
    """``a, b, c``: true if one test is; null if none is but one is null."""

    tests: tuple[UnaryTest, ...]

    def test(self, value: Any, scope: Scope) -> bool | None:
        unknown = False
        for one in self.tests:
            result = one.test(value, scope)
            if result is True:
                return True
            unknown = unknown or result is None
        return None if unknown else False

    def refs(self) -> Iterator[str]:
        for one in self.tests:
            yield from one.refs()


@dataclass(frozen=True)
class NoneOf(UnaryTest):
    """``not(a, b)``."""

    tests: AnyOf

    def test(self, value: Any, scope: Scope) -> bool | None:
        result = self.tests.test(value, scope)
        return None if result is None else not result

    def refs(self) -> Iterator[str]:
        return self.tests.refs()
