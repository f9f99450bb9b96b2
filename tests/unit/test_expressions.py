"""Unit tests for bpm.expressions: what conditions may say, and how they fail."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.errors import ExpressionEvalError, InvalidExpression, MissingVariable
from bpm.expressions import (
    MAX_SOURCE_LENGTH,
    Expression,
    compile_expression,
    evaluate_condition,
)

WHERE = "flow 'f_big'"


def compile_(source: str) -> Expression:
    return compile_expression(source, where=WHERE)


def ev(source: str, **variables: Any) -> Any:
    return compile_(source).evaluate(variables)


def cond(source: str, **variables: Any) -> bool:
    return evaluate_condition(compile_(source), variables)


def rejected(source: str) -> str:
    with pytest.raises(InvalidExpression) as info:
        compile_(source)
    message = str(info.value)
    assert message.startswith(f"{WHERE}: condition "), message
    return message


def eval_error(source: str, **variables: Any) -> ExpressionEvalError:
    expr = compile_(source)
    with pytest.raises(ExpressionEvalError) as info:
        expr.evaluate(variables)
    assert str(info.value).startswith(f"{WHERE}: condition "), str(info.value)
    assert info.value.__cause__ is not None
    return info.value


# --- what works -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "variables", "expected"),
    [
        ("total > 100", {"total": 150}, True),
        ("total > 100", {"total": 100}, False),
        ("total >= 100", {"total": 100}, True),
        ("total <= 100 and total != 5", {"total": 5}, False),
        ("status == 'open'", {"status": "open"}, True),
        ("1 < x < 3", {"x": 2}, True),
        ("1 < x < 3", {"x": 3}, False),
    ],
)
def test_comparisons(source: str, variables: dict[str, Any], expected: bool) -> None:
    assert evaluate_condition(compile_(source), variables) is expected


def test_boolean_operators() -> None:
    assert cond("a and not b", a=True, b=False) is True
    assert cond("a or b", a=False, b=False) is False
    assert cond("not (a and b) or c", a=True, b=True, c=True) is True


def test_arithmetic() -> None:
    assert ev("7 // 2 + 7 % 3 - -1 * 2.5") == 6.5
    assert ev("price * qty / 2", price=3, qty=4) == 6.0
    assert ev("'ab' + 'cd'") == "abcd"


def test_in_and_not_in() -> None:
    assert cond("'vip' in tags", tags=["vip", "new"]) is True
    assert cond("3 not in (1, 2)") is True
    assert cond("country in ['DE', 'FR']", country="US") is False
    assert cond("'k' in obj", obj={"k": 1}) is True


def test_dotted_and_indexed_json_access() -> None:
    order = {"total": 150, "lines": [{"sku": "a"}, {"sku": "b"}], "items": 2}
    assert ev("order.total", order=order) == 150
    assert ev("order['total']", order=order) == 150
    assert ev("order.lines[1].sku", order=order) == "b"
    assert ev("order.lines[-1]['sku']", order=order) == "b"
    assert ev("order.items", order=order) == 2  # a key named like a dict method is just a key
    assert ev("xs[1:]", xs=[1, 2, 3]) == [2, 3]


def test_whitelisted_functions() -> None:
    assert cond("len(items) > 1 and abs(d) == 2", items=[1, 2], d=-2) is True
    assert ev("max(1, x, min(7, 9))", x=5) == 7
    assert ev("round(x, 1)", x=1.26) == 1.3
    assert ev("[int('3'), float(1), str(2), bool(0)]") == [3, 1.0, "2", False]


def test_lowercase_literals() -> None:
    assert cond("x == null and y == true and z == false", x=None, y=True, z=False) is True
    assert cond("x == None and y == True", x=None, y=True) is True
    assert "true" not in compile_("x == true").names


def test_names_lists_top_level_variables_only() -> None:
    expr = compile_("order.total > limit and len(tags) > 0 and null == x['k']")
    assert expr.names == frozenset({"order", "limit", "tags", "x"})


def test_camunda_wrapper_translates_operators_but_not_strings() -> None:
    expr = compile_('${a > 1 && !b || c == "x && y"}')
    assert expr.python == "a > 1 and (not b) or c == 'x && y'"
    assert expr.names == frozenset({"a", "b", "c"})
    assert evaluate_condition(expr, {"a": 2, "b": False, "c": "z"}) is True
    assert evaluate_condition(expr, {"a": 0, "b": False, "c": "x && y"}) is True
    assert evaluate_condition(expr, {"a": 2, "b": True, "c": "x"}) is False


def test_camunda_wrapper_keeps_not_equal_and_strings() -> None:
    expr = compile_("  ${ status != 'a || !b' }  ")
    assert expr.python == "status != 'a || !b'"
    assert evaluate_condition(expr, {"status": "a || !b"}) is False
    assert cond("${x == 'it\\'s && !'}", x="it's && !") is True


def test_camunda_bang_binds_like_juel() -> None:
    """``!a == b`` is ``(!a) == b`` in JUEL, not Python's ``not (a == b)``."""
    assert cond("${!a == b}", a=True, b=False) is True
    assert cond("${!(a && b)}", a=True, b=False) is True
    assert cond("${!!a}", a=True) is True


@pytest.mark.parametrize(
    ("source", "variables", "expected"),
    [
        ("${amount gt 100}", {"amount": 150}, True),
        ("${amount lt 100}", {"amount": 150}, False),
        ("${amount ge 150 and amount le 150}", {"amount": 150}, True),
        ("${status eq 'open' or status ne 'closed'}", {"status": "x"}, True),
        ("${not vip and amount gt 10}", {"vip": False, "amount": 11}, True),
        ("${not a eq b}", {"a": True, "b": False}, True),  # (not a) == b, as with '!'
        ("${x mod 2 eq 0 and x div 2 eq 2}", {"x": 4}, True),
        ("${empty items}", {"items": []}, True),
        ("${empty order.lines}", {"order": {"lines": [1]}}, False),
        ("${not empty order['note']}", {"order": {"note": ""}}, False),
        ("${empty name && empty (other)}", {"name": None, "other": {}}, True),
        ("${status eq 'gt'}", {"status": "gt"}, True),  # inside a string: left alone
        ("${order.eq == 1}", {"order": {"eq": 1}}, True),  # after a dot: a key
    ],
)
def test_juel_operator_words(source: str, variables: dict[str, Any], expected: bool) -> None:
    assert evaluate_condition(compile_(source), variables) is expected


def test_juel_empty_needs_an_operand() -> None:
    assert "uses 'empty' without an operand" in rejected("${empty}")


def test_camunda_literals() -> None:
    assert cond("${x == null && ok == true}", x=None, ok=True) is True


def test_expression_keeps_source_and_is_reusable() -> None:
    expr = compile_("${n > 1}")
    assert expr.source == "${n > 1}"
    assert [evaluate_condition(expr, {"n": n}) for n in (0, 5)] == [False, True]


# --- rejected at compile time -----------------------------------------------------------------


def test_syntax_error_names_column() -> None:
    message = rejected("total >")
    assert message == f'{WHERE}: condition "total >" does not parse: invalid syntax at column 8'


def test_syntax_error_in_camunda_form_shows_translation() -> None:
    assert rejected("${a &&}").endswith('does not parse: invalid syntax at column 7 of "a  and"')


@pytest.mark.parametrize("source", ["", "   ", "${ }"])
def test_empty_is_rejected(source: str) -> None:
    assert "is empty" in rejected(source)


@pytest.mark.parametrize("source", ["x.__class__", "order._secret", "().__class__.__bases__"])
def test_underscore_attributes_are_rejected(source: str) -> None:
    assert "starting with '_'" in rejected(source)


@pytest.mark.parametrize("source", ["open('/etc/passwd')", "__import__('os')", "eval('1')"])
def test_calls_outside_whitelist_are_rejected(source: str) -> None:
    message = rejected(source)
    assert "uses a function call" in message
    assert (
        "(allowed: JSON, S, XML, abs, bool, dateTime, empty, float, getVariable, int, len, max, "
        "min, now, round, str)" in message
    )


def test_method_calls_are_rejected() -> None:
    assert "calls 'name.upper'" in rejected("name.upper()")
    assert "calls 'order.items'" in rejected("order.items()")


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("lambda: 1", "a lambda"),
        ("[x for x in xs]", "a comprehension"),
        ("{x: 1 for x in xs}", "a comprehension"),
        ("max(x for x in xs)", "a comprehension"),
        ("f'{x}'", "an f-string"),
        ("(y := 1)", "an assignment"),
        ("1 if a else 2", "a conditional"),
        ("{'a': 1}", "a dict literal"),
        ("2 ** 8", "'**'"),
        ("a is None", "'is'"),
        ("a | b", "'BitOr'"),
        ("[*xs]", "a '*'"),
        ("round(x, ndigits=1)", "a keyword argument"),
        ("b'x'", "bytes literal"),
        ("${a ~ b}", "'~'"),
    ],
)
def test_unsupported_syntax_is_rejected(source: str, what: str) -> None:
    assert what in rejected(source)


def test_statements_do_not_parse() -> None:
    assert "does not parse" in rejected("import os")
    assert "does not parse" in rejected("x = 1")


def test_too_long_is_rejected() -> None:
    source = "a or " * (MAX_SOURCE_LENGTH // 5) + "b"
    assert f"the limit is {MAX_SOURCE_LENGTH}" in rejected(source)


def test_too_deep_is_rejected() -> None:
    assert "too complex (deeper than" in rejected("-" * 60 + "1")
    assert "too complex (deeper than" in rejected("not " * 60 + "x")


def test_too_many_nodes_is_rejected() -> None:
    assert "too complex (over" in rejected("[" + ", ".join(["1"] * 600) + "]")


def test_non_string_source_is_rejected() -> None:
    with pytest.raises(InvalidExpression, match="must be a string"):
        compile_expression(5, where=WHERE)  # type: ignore[arg-type]


def test_custom_kind_appears_in_messages() -> None:
    with pytest.raises(InvalidExpression, match=r"^timer 't1': timer expression .*timer"):
        compile_expression("open(x)", where="timer 't1'", kind="timer expression")


# --- failures at evaluation time ----------------------------------------------------------------


def test_missing_variable_is_named() -> None:
    expr = compile_("total > 1 and status == 'x'")
    with pytest.raises(MissingVariable) as info:
        expr.evaluate({"status": "x"})
    assert info.value.name == "total"
    assert "'total'" in str(info.value)
    assert isinstance(info.value, ExpressionEvalError)
    assert isinstance(info.value.__cause__, KeyError)


def test_short_circuit_skips_missing_variables() -> None:
    assert cond("ok or later > 1", ok=True) is True


def test_missing_key_is_named() -> None:
    error = eval_error("order.total > 1", order={"sum": 2})
    assert "order has no key 'total'" in str(error)
    assert "order has no key 'x'" in str(eval_error("order['x']", order={}))


def test_dict_methods_are_keys_never_attributes() -> None:
    error = eval_error("order.items", order={"total": 1})
    assert "order has no key 'items'" in str(error)
    assert "no key 'keys'" in str(eval_error("order.keys", order={}))


def test_attributes_of_non_objects_fail() -> None:
    assert "is a string, so it has no field 'upper'" in str(eval_error("'a'.upper"))
    assert "is a list, so it has no field 'append'" in str(eval_error("xs.append", xs=[]))
    assert "is a number, so it has no field 'real'" in str(eval_error("n.real", n=1))


def test_index_errors_fail() -> None:
    assert "xs has no index 5 (length 2)" in str(eval_error("xs[5]", xs=[1, 2]))
    assert "cannot index n (a number)" in str(eval_error("n[0]", n=3))


def test_type_errors_fail_in_json_terms() -> None:
    error = eval_error("'a' < 1")
    assert "cannot use '<' on a string and a number" in str(error)
    assert isinstance(error.__cause__, TypeError)
    assert "cannot use '-' on a string" in str(eval_error("-s", s="x"))
    assert "cannot use 'in' on a number and a number" in str(eval_error("1 in 2"))


def test_errors_inside_functions_fail() -> None:
    assert "invalid literal" in str(eval_error("int(s)", s="abc"))
    assert isinstance(eval_error("len(n)", n=1).__cause__, TypeError)


@pytest.mark.parametrize("source", ["1 / 0", "x // 0", "x % 0", "1.5 / zero"])
def test_division_by_zero_fails(source: str) -> None:
    error = eval_error(source, x=3, zero=0)
    assert "division by zero" in str(error)
    assert isinstance(error.__cause__, ZeroDivisionError)


def test_simpleeval_size_limits_stay_on() -> None:
    assert "long" in str(eval_error("s * 10000000", s="ab"))


@pytest.mark.parametrize(
    ("source", "variables", "kind"),
    [
        ("count", {"count": 1}, "a number"),
        ("name", {"name": "no"}, "a string"),
        ("a and b", {"a": True, "b": "yes"}, "a string"),
        ("x", {"x": None}, "null"),
        ("order", {"order": {}}, "an object"),
    ],
)
def test_non_bool_condition_fails(source: str, variables: dict[str, Any], kind: str) -> None:
    with pytest.raises(ExpressionEvalError, match="not true or false") as info:
        evaluate_condition(compile_(source), variables)
    assert f"gave {kind}" in str(info.value)
    assert not isinstance(info.value, MissingVariable)


def test_evaluate_returns_any_json_value() -> None:
    """Timer expressions evaluate to non-bool values; only conditions insist on bool."""
    assert ev("${'PT' + str(minutes) + 'M'}", minutes=5) == "PT5M"
