"""Sequence-flow conditions from BPMN XML: Camunda JUEL passes through, simple Zeebe FEEL is
translated to the engine's condition language (see docs/bpmn.md#conditions)."""

from __future__ import annotations

import re

#: One FEEL token: a string, a number, a (dotted) name, or an operator / parenthesis.
_TOKEN = re.compile(
    r"""\s*(?:(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<num>\d+(?:\.\d+)?)"""
    r"""|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"""
    r"""|(?P<op><=|>=|!=|=|<|>|\(|\)))"""
)
_KEEP = {"and": "and", "or": "or", "true": "true", "false": "false", "null": "null"}
#: FEEL words with a meaning the translation does not carry over.
_UNSUPPORTED = {
    "in",
    "between",
    "instance",
    "of",
    "some",
    "every",
    "satisfies",
    "for",
    "return",
    "if",
    "then",
    "else",
    "function",
    "is",
    "lambda",
    "not_in",
}


class FeelUnsupported(ValueError):
    """The FEEL expression uses something the translation does not handle; the message says what."""


def feel_to_condition(expression: str) -> str:
    """Translate ``=x > 5 and not(done)`` to ``x > 5 and not ( done )``; raises FeelUnsupported."""
    source = expression.strip()
    if source.startswith("="):
        source = source[1:]
    out: list[str] = []
    pos = 0
    depth = 0
    tokens: list[tuple[str, str]] = []
    while pos < len(source):
        if source[pos:].strip() == "":
            break
        match = _TOKEN.match(source, pos)
        if match is None or match.end() == pos:
            rest = source[pos:].strip()
            raise FeelUnsupported(f"cannot translate the FEEL text at {rest[:20]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    if not tokens:
        raise FeelUnsupported("the FEEL expression is empty")
    for index, (kind, value) in enumerate(tokens):
        following = tokens[index + 1][1] if index + 1 < len(tokens) else ""
        if kind == "name":
            if value == "not":
                if following != "(":
                    raise FeelUnsupported("'not' must be written as a call: not(...)")
                out.append("not")
            elif value in _KEEP:
                out.append(_KEEP[value])
            elif value.split(".")[0] in _UNSUPPORTED:
                raise FeelUnsupported(f"the FEEL keyword {value!r} is not supported")
            elif following == "(":
                raise FeelUnsupported(f"the FEEL function call {value}(...) is not supported")
            else:
                out.append(value)
        elif kind == "op":
            if value == "(":
                depth += 1
            elif value == ")":
                depth -= 1
                if depth < 0:
                    raise FeelUnsupported("unbalanced parentheses")
            out.append("==" if value == "=" else value)
        else:
            out.append(value)
    if depth != 0:
        raise FeelUnsupported("unbalanced parentheses")
    return " ".join(out)


_JUEL_DEFERRED = re.compile(r"^\s*#\{(.*)\}\s*$", re.DOTALL)


def translate_condition(text: str) -> str:
    """The engine condition for a ``conditionExpression`` body (raises FeelUnsupported)."""
    stripped = text.strip()
    if stripped.startswith("="):
        return feel_to_condition(stripped)
    deferred = _JUEL_DEFERRED.match(stripped)
    if deferred:
        return "${" + deferred.group(1) + "}"
    return stripped


_FEEL_TIMER_LITERAL = re.compile(
    r'=\s*(?:(?:duration|date and time)\s*\(\s*"([^"\\]*)"\s*\)|"([^"\\]*)")\s*'
)
_FEEL_TIMER_NAME = re.compile(r"=\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*")


def feel_timer(text: str) -> str:
    """A Zeebe timer body: ``="PT5M"``, ``=duration("PT5M")`` and ``=date and time("…")`` are
    their literal, ``=due`` is ``${due}`` (the variable's ISO value); raises FeelUnsupported."""
    if literal := _FEEL_TIMER_LITERAL.fullmatch(text):
        return literal[1] if literal[1] is not None else literal[2]
    if (name := _FEEL_TIMER_NAME.fullmatch(text)) and name[1] not in _KEEP:
        return "${" + name[1] + "}"
    raise FeelUnsupported(
        'only a variable name, a string, duration("…") or date and '
        'time("…") are supported in a FEEL timer'
    )
