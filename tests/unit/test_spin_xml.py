"""Spin's XML reads in JUEL (``S(xml)``, ``XML(text)``): elements, attributes, text and names;
XML with a DTD or entities refused before anything expands or is fetched."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.errors import ExpressionEvalError
from bpm.expressions import compile_expression
from bpm.juel_methods import CallScope, ExecutionView, Invocation, check_call

ORDER = (
    '<order xmlns="urn:shop" id="A-1" priority="high">'
    "<customer>Ann <b>Lee</b></customer>"
    '<item sku="x1">Book</item><item sku="x2">Pen</item>'
    "</order>"
)
VARIABLES: dict[str, Any] = {"order": ORDER, "plain": "<a><b>1</b></a>"}


def run(source: str) -> Any:
    expr = compile_expression(source, where="flow 'f'", scope=CallScope.INLINE)
    return expr.evaluate(VARIABLES, Invocation(ExecutionView(VARIABLES)))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("${S(order).childElement('customer').textContent()}", "Ann Lee"),
        ("${S(order).attr('id').value()}", "A-1"),
        ("${S(order).attr('priority').value() == 'high'}", True),
        ("${S(order).childElements('item').size()}", 2),
        ("${S(order).childElements('item').get(1).attr('sku').value()}", "x2"),
        ("${S(order).childElements('missing').isEmpty()}", True),
        ("${S(order).name()}", "order"),
        ("${S(order).namespace()}", "urn:shop"),
        ("${S(order).hasAttr('id') && !S(order).hasChild('total')}", True),
        ("${S(order).childElement('item', 'urn:shop').textContent()}", None),  # two: refused
        ("${XML(plain).childElement('b').textContent().equals('1')}", True),
        ("${S(plain).childElement('b')}", "<b>1</b>"),  # left as its XML text
        ("${S(plain).attr('x')}", None),
    ],
)
def test_xml_reads(source: str, expected: Any) -> None:
    if expected is None:
        with pytest.raises(ExpressionEvalError):
            run(source)
    else:
        assert run(source) == expected


def test_a_missing_child_or_attribute_is_named() -> None:
    with pytest.raises(ExpressionEvalError, match="<order> has no child elements <total>"):
        run("${S(order).childElement('total')}")
    with pytest.raises(ExpressionEvalError, match="<order> has 2 child elements <item>"):
        run("${S(order).childElement('item')}")
    with pytest.raises(ExpressionEvalError, match="no attribute 'currency'"):
        run("${S(order).attr('currency')}")


@pytest.mark.parametrize(
    "text",
    [
        '<!DOCTYPE a [<!ENTITY x "xxxxxxxx"><!ENTITY y "&x;&x;&x;&x;">]><a>&y;</a>',
        '<!DOCTYPE a [<!ENTITY e SYSTEM "http://127.0.0.1:9/secret">]><a>&e;</a>',
        '<!DOCTYPE a SYSTEM "http://127.0.0.1:9/a.dtd"><a/>',
    ],
)
def test_dtds_and_entities_are_refused_never_fetched(text: str) -> None:
    VARIABLES["evil"] = text
    try:
        with pytest.raises(ExpressionEvalError, match="refuses XML with a DTD or entities"):
            run("${S(evil).textContent()}")
    finally:
        del VARIABLES["evil"]


def test_malformed_xml_and_json_readers_say_what_they_got() -> None:
    with pytest.raises(ExpressionEvalError, match="not XML"):
        run("${S('<a>').name()}")
    with pytest.raises(ExpressionEvalError, match=r"JSON\(\) got XML"):
        run("${JSON(plain).prop('a')}")
    with pytest.raises(ExpressionEvalError, match="no method 'prop'"):
        run("${S(plain).prop('a')}")


def test_xml_reads_are_allowed_inline_and_writes_are_not_offered() -> None:
    for method in ("childElement", "childElements", "attr", "textContent", "name"):
        assert check_call(None, method, CallScope.INLINE) is None
    assert check_call(None, "append", CallScope.INLINE) is not None
