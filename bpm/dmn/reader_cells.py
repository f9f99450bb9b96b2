"""Reading the pieces every decision is made of: the list of problems found so far, and the
compiling of one expression or input entry in its declared expression language.

Only FEEL is evaluated. JUEL is accepted where it means nothing but a variable name or a
literal (``${amount}``, ``"gold"``), which reads the same in FEEL, and as an input entry that
is a boolean variable (``${approved}``); any other JUEL, and every script language, is refused
naming the cell, since running it would mean running code."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bpm.definitions.bpmn_xml import XmlElement
from bpm.dmn.feel_ast import Expr, Holds, Literal, Name, Path, UnaryTest
from bpm.dmn.feel_lex import FeelSyntaxError
from bpm.dmn.feel_parse import parse_expression, parse_unary_tests
from bpm.dmn.limits import MAX_PROBLEMS
from bpm.errors import InvalidDefinition

#: The URIs (and Camunda's short name) that mean FEEL in ``expressionLanguage``.
FEEL_LANGUAGES = frozenset(
    {
        "feel",
        "http://www.omg.org/spec/FEEL/20140401",
        "http://www.omg.org/spec/DMN/20180521/FEEL/",
        "https://www.omg.org/spec/DMN/20191111/FEEL/",
        "https://www.omg.org/spec/DMN/20211108/FEEL/",
        "https://www.omg.org/spec/DMN/20230324/FEEL/",
    }
)
JUEL = "juel"
_JUEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_JUEL_LITERAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?|true|false|null|\"[^\"\\]*\"")
_JUEL_QUOTED = re.compile(r"'([^'\\]*)'")


@dataclass
class Problems:
    """Every problem of a file, so one refusal lists them all, one per line (up to
    ``MAX_PROBLEMS``, then how many more)."""

    items: list[tuple[str, str | None]] = field(default_factory=list)
    dropped: int = 0

    def add(self, element: XmlElement, where: str, message: str) -> None:
        if len(self.items) >= MAX_PROBLEMS:
            self.dropped += 1
            return
        self.items.append((f"line {element.line}: {where}: {message}", element.attrib.get("id")))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        first_element = next((e for _, e in self.items if e), None)
        lines = [text for text, _ in self.items]
        if self.dropped:
            lines.append(f"... and {self.dropped} more problems")
        raise InvalidDefinition("\n".join(lines), first_element)


def describe(element: XmlElement, decision: str | None, index: int | None = None) -> str:
    """``inputEntry 'UnaryTests_1' in decision 'dish'``: where a problem is, for messages."""
    ident = element.attrib.get("id")
    name = f"{element.tag} {ident!r}" if ident else f"{element.tag} #{index or 1}"
    return f"{name} in decision {decision!r}" if decision is not None else name


def text_of(element: XmlElement | None, ns: str) -> str:
    """The ``<text>`` of an expression element ('' when absent)."""
    if element is None:
        return ""
    text = element.find(ns, "text")
    return text.text if text is not None else ""


def language(element: XmlElement, default: str | None) -> str | None:
    """The element's ``expressionLanguage``, else the file's; ``None`` means FEEL."""
    declared = element.attrib.get("expressionLanguage") or default
    if declared is None or declared.strip() == "" or declared.strip().lower() in FEEL_LANGUAGES:
        return None
    if declared in FEEL_LANGUAGES:
        return None
    return declared.strip()


def compile_expression(source: str, lang: str | None) -> Expr:
    """An input expression, output entry or literal expression; raises FeelSyntaxError."""
    if lang is None:
        return parse_expression(source)
    if lang.lower() == JUEL:
        return _trivial_juel(source)
    raise _foreign(lang)


def compile_tests(source: str, lang: str | None, input_variable: str) -> UnaryTest:
    """An input entry; raises FeelSyntaxError."""
    if lang is None:
        return parse_unary_tests(source, input_variable)
    if lang.lower() == JUEL:
        try:
            condition = _trivial_juel(source)
        except FeelSyntaxError:
            condition = None
        if isinstance(condition, Name | Path) or (
            isinstance(condition, Literal) and isinstance(condition.value, bool)
        ):
            return Holds(condition)
        raise FeelSyntaxError(
            "JUEL input entries other than a boolean variable (${approved}) are not "
            'supported; write the test in FEEL (for example < 10, [1..5], "gold", not("red"))'
        )
    raise _foreign(lang)


def _foreign(lang: str) -> FeelSyntaxError:
    return FeelSyntaxError(
        f"expressionLanguage {lang!r} is not supported: cells are evaluated as FEEL only "
        f"(scripts would run code); remove the attribute and write the cell in FEEL"
    )


def _trivial_juel(source: str) -> Expr:
    text = source.strip()
    if text.startswith("${") and text.endswith("}"):
        text = text[2:-1].strip()
    quoted = _JUEL_QUOTED.fullmatch(text)
    if quoted is not None:
        return Literal(quoted[1])
    if _JUEL_NAME.fullmatch(text) and text not in ("true", "false", "null"):
        expr = parse_expression(text)
        assert isinstance(expr, Name | Path)
        return expr
    if _JUEL_LITERAL.fullmatch(text):
        return parse_expression(text)
    raise FeelSyntaxError(
        f"the JUEL expression {source.strip()[:60]!r} is not supported: only a variable name "
        f"or a literal is; write the expression in FEEL instead"
    )
