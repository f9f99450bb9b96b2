"""The FEEL subset on its own: what parses, what it evaluates to, and what is refused."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone
from typing import Any

import pytest

from bpm.dmn.feel_ast import Scope
from bpm.dmn.feel_lex import FeelSyntaxError
from bpm.dmn.feel_parse import parse_expression, parse_unary_tests, parse_values
from bpm.dmn.feel_values import FeelError
from bpm.dmn.limits import MAX_EXPRESSION_CHARS, MAX_NESTING

VARIABLES: dict[str, Any] = {
    "a": 5,
    "b": 2.5,
    "name": "Ada",
    "order": {"total": 120, "customer": {"tier": "gold"}},
    "flag": True,
    "nothing": None,
    "day": date(2024, 2, 29),
    "with space": 7,
}


def value(text: str) -> Any:
    return parse_expression(text).evaluate(Scope(VARIABLES))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("4.25", 4.25),
        (".5", 0.5),
        ("-a", -5),
        ("- -3", 3),
        ('"a \\"quoted\\" \\u00e9"', 'a "quoted" é'),
        ("true", True),
        ("null", None),
        ("a + b * 2", 10.0),
        ("(a + 1) * 2", 12),
        ("10 / 4", 2.5),
        ("10 / 5", 2),
        ("a - 1 - 1", 3),
        ('name + "!"', "Ada!"),
        ("order.total", 120),
        ("order.customer.tier", "gold"),
        ("`with space` + 1", 8),
        ("a > 3 and b < 3", True),
        ("a > 6 or flag", True),
        ("a != 5", False),
        ("nothing = null", True),
        ("a = null", False),
        ("nothing < 3", None),
        ("nothing + 1", None),
        ("false and nothing", False),
        ("true or nothing", True),
        ("true and nothing", None),
        ("not(flag)", False),
        ('date("2024-02-29")', date(2024, 2, 29)),
        ("date(day)", date(2024, 2, 29)),
        ('date and time("2024-02-29T10:30:00")', datetime(2024, 2, 29, 10, 30)),
        ('date and time("2024-02-29T10:30:00Z")', datetime(2024, 2, 29, 10, 30, tzinfo=UTC)),
        (
            'date and time("2024-02-29T10:30:00.5+02:00")',
            datetime(2024, 2, 29, 10, 30, 0, 500000, tzinfo=timezone(timedelta(hours=2))),
        ),
        ('date and time("2024-02-29")', datetime(2024, 2, 29)),
        ('time("08:15:00")', time(8, 15)),
        ('day > date("2024-01-01")', True),
    ],
)
def test_expressions(text: str, expected: Any) -> None:
    result = value(text)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("missing + 1", "variable 'missing' is not set"),
        ("order.nope", "the context has no entry 'nope' (it has total, customer)"),
        ("name.first", "cannot read '.first' of \"Ada\" (string)"),
        ('a + "x"', 'cannot add 5 (number) and "x" (string)'),
        ("a / 0", "division by zero (5 / 0)"),
        ("name < 3", 'cannot order "Ada" (string) and 3 (number)'),
        ("flag < true", "cannot order true (boolean) and true (boolean)"),
        ("a and true", "'and' needs booleans, not 5 (number)"),
        ("-name", 'cannot negate "Ada" (string)'),
        ("not(a)", "not() needs a boolean, not 5 (number)"),
        ("date(a)", "date() cannot take 5 (number)"),
        ("date(name)", '"Ada" is not a date (yyyy-mm-dd)'),
    ],
)
def test_evaluation_errors(text: str, message: str) -> None:
    with pytest.raises(FeelError) as caught:
        value(text)
    assert str(caught.value) == message


def test_aware_and_naive_date_times_do_not_compare() -> None:
    with pytest.raises(FeelError, match="cannot compare"):
        value('date and time("2024-01-01T00:00:00Z") = date and time("2024-01-01T00:00:00")')


def test_numbers_stay_bounded() -> None:
    big = "9" * 39
    with pytest.raises(FeelError, match="bits"):
        value("*".join([big] * 12))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the expression is empty"),
        ("${amount}", "'${...}' at column 1 is JUEL (Java EL), not FEEL"),
        ('#{"x"}', "'#{...}' at column 1 is JUEL (Java EL), not FEEL"),
        ('${java.lang.Runtime.getRuntime().exec("rm")}', "is JUEL (Java EL), not FEEL"),
        ("__import__('os')", 'unexpected character "\'" at column 12'),
        ("a ** 2", "'**' (power) at column 3 is not supported"),
        ("if a then 1 else 2", "FEEL 'if' (column 1) is not supported"),
        ("for x in xs return x", "FEEL 'for' (column 1) is not supported"),
        ("a between 1 and 2", "FEEL 'between' (column 3) is not supported"),
        ("x in (1, 2)", "FEEL 'in' (column 3) is not supported"),
        ("count(xs)", "function 'count' (column 1) is not supported"),
        ("upper case(name)", "unexpected 'case'"),
        ("date(1, 2)", "date() takes one argument"),
        ('date("2024-02-30")', '"2024-02-30" is not a date: day is out of range for month'),
        ('date and time("2024-02-01T25:00:00")', "is not a time: hour must be in 0..23"),
        ('"open', "the string starting at column 1 is not closed"),
        ('"\\q"', "unknown escape '\\q'"),
        ("{a: 1}", "'{' at column 1: FEEL contexts are not supported"),
        ("[1, 2]", "lists and ranges are only allowed as input entries"),
        ("1 < a < 3", "comparisons cannot be chained"),
        ("a +", "the expression ends where a value was expected"),
        ("a b", "unexpected 'b' at column 3; expected the end of the expression"),
        ("?", "'?' (the input value) is only allowed in input entries"),
        ("`unclosed", "is not closed"),
        ("1" * 41, "has 41 characters; at most 40 are accepted"),
        ("(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1), "nested deeper than"),
        ("-" * (MAX_NESTING + 1) + "1", "nested deeper than"),
        ("a" * (MAX_EXPRESSION_CHARS + 1), "characters long; at most"),
        ("a.", "a name after '.'"),
        ("not x", "unexpected 'not'"),
        ("1 ² 2", "unexpected character '²'"),
    ],
)
def test_refused_expressions(text: str, message: str) -> None:
    with pytest.raises(FeelSyntaxError) as caught:
        parse_expression(text)
    assert message in str(caught.value)


def passes(entry: str, input_value: Any, **variables: Any) -> bool | None:
    test = parse_unary_tests(entry, "cellInput")
    scope = Scope({**VARIABLES, **variables}, "cellInput", input_value)
    return test.test(input_value, scope)


@pytest.mark.parametrize(
    ("entry", "input_value", "expected"),
    [
        ("-", None, True),
        ("  ", 3, True),
        ("5", 5, True),
        ("5", 5.0, True),
        ("5", 6, False),
        ("5", None, False),
        ('"x"', "x", True),
        ("null", None, True),
        ("null", 0, False),
        ("< 5", 4, True),
        ("< 5", None, None),
        ("[1..5]", None, None),
        ("[1..5]", 5, True),
        ("]1..5]", 1, False),
        ("[1..5[", 5, False),
        ("(1..5)", 1, False),
        ("(a)", 5, True),
        ("(a > 1)", 5, True),
        ("a < 1", 5, False),
        ("a > 1", None, False),
        ("1, 2, 3", 2, True),
        ("1, < 0", 0, False),
        ("1, < 0", None, None),
        ("1, null", None, True),
        ("not(1, 2)", 3, True),
        ("not(1, 2)", 2, False),
        ("not(< 5)", None, None),
        ("not(null)", None, False),
        ("a", 5, True),
        ("order.total", 120, True),
        ("list", 2, True),
        ("list", 9, False),
        ("? > 1 and ? < 3", 2, True),
        ("cellInput = 4", 4, True),
        ("cellInput", True, True),
        ('>= date("2024-01-01")', date(2024, 1, 1), True),
        ("[a..a * 2]", 10, True),
    ],
)
def test_unary_tests(entry: str, input_value: Any, expected: bool | None) -> None:
    assert passes(entry, input_value, list=[1, 2, 3]) is expected


def test_an_entry_naming_the_input_must_be_a_condition() -> None:
    with pytest.raises(FeelError, match="must be true or false, not 6 \\(number\\)"):
        passes("? + 1", 5)


def test_unary_test_type_mismatches_raise() -> None:
    with pytest.raises(FeelError, match='cannot compare "5" \\(string\\) and 5 \\(number\\)'):
        passes("5", "5")
    with pytest.raises(FeelError, match="cannot order"):
        passes("[1..5]", "3")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("-, 1", "'-' (any value) must be the whole input entry"),
        ("[1..]", "unexpected ']' at column 5; expected a value"),
        ("[1..5", "']', ')' or '[' to close the range"),
        ("[1 5]", "expected '..'"),
        ("not(1", "the expression ends where ')' was expected"),
        ("not(1), 2", "expected the end of the expression"),
        ("1,", "the expression ends where a value was expected"),
        ("= 5", "unexpected '=' at column 1"),
    ],
)
def test_refused_unary_tests(entry: str, message: str) -> None:
    with pytest.raises(FeelSyntaxError) as caught:
        parse_unary_tests(entry, "cellInput")
    assert message in str(caught.value)


def test_value_lists() -> None:
    assert parse_values('"gold", "silver","bronze"') == ("gold", "silver", "bronze")
    assert parse_values("1, -2.5") == (1, -2.5)
    with pytest.raises(FeelSyntaxError, match="may only hold literals"):
        parse_values('"a", < 3')


def test_refs_name_what_an_entry_reads() -> None:
    test = parse_unary_tests("[low..high], ? > limit", "cellInput")
    assert sorted(set(test.refs())) == ["?", "high", "limit", "low"]
