"""Splits FEEL text into tokens. Written by hand so that only the forms the evaluator knows
can come out of it: anything else (JUEL's ``${``, a backtick, a brace) stops here with a
message, before any parsing or evaluation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bpm.dmn.limits import MAX_EXPRESSION_CHARS, MAX_NUMBER_CHARS

TokenKind = Literal["num", "str", "name", "func", "op", "end"]

#: Punctuation, longest first so ``<=`` is not read as ``<`` then ``=``.
_OPS = (
    "..",
    "<=",
    ">=",
    "!=",
    "=",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "(",
    ")",
    "[",
    "]",
    ",",
    ".",
    "?",
)
#: Names that never start a function call even when a parenthesis follows (``a and (b)``).
_NOT_CALLS = frozenset({"and", "or", "true", "false", "null"})
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?|\.[0-9]+")
_DIGITS = frozenset("0123456789")
_DATE_AND_TIME = re.compile(r"\s+and\s+time\s*\(")
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "'": "'"}


class FeelSyntaxError(ValueError):
    """The text is not in the FEEL subset this package evaluates; the message says where."""


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    pos: int
    #: The decoded string for ``str``, the digits for ``num``, else ``text``.
    value: str


def tokenize(source: str) -> list[Token]:
    """The tokens of ``source``, ending with an ``end`` token."""
    if len(source) > MAX_EXPRESSION_CHARS:
        raise FeelSyntaxError(
            f"the expression is {len(source)} characters long; at most "
            f"{MAX_EXPRESSION_CHARS} are accepted"
        )
    tokens: list[Token] = []
    pos = 0
    while True:
        while pos < len(source) and source[pos].isspace():
            pos += 1
        if pos >= len(source):
            tokens.append(Token("end", "", pos, ""))
            return tokens
        token = _one(source, pos)
        tokens.append(token)
        pos = token.pos + len(token.text)


def _one(source: str, pos: int) -> Token:
    char = source[pos]
    if char == '"':
        return _string(source, pos)
    if char in _DIGITS or (char == "." and source[pos + 1 : pos + 2] in _DIGITS):
        match = _NUMBER.match(source, pos)
        assert match is not None
        text = match.group()
        if len(text) > MAX_NUMBER_CHARS:
            raise FeelSyntaxError(
                f"the number at column {pos + 1} has {len(text)} characters; "
                f"at most {MAX_NUMBER_CHARS} are accepted"
            )
        return Token("num", text, pos, text)
    if char.isalpha() or char == "_":
        return _name(source, pos)
    if char == "`":
        end = source.find("`", pos + 1)
        if end <= pos + 1:
            raise FeelSyntaxError(f"the name quoted with '`' at column {pos + 1} is not closed")
        return Token("name", source[pos : end + 1], pos, source[pos + 1 : end])
    if source.startswith("${", pos) or source.startswith("#{", pos):
        raise FeelSyntaxError(
            f"'{source[pos : pos + 2]}...}}' at column {pos + 1} is JUEL (Java EL), not FEEL; "
            f"write the FEEL expression itself (a variable name, a literal, a comparison)"
        )
    if source.startswith("**", pos):
        raise FeelSyntaxError(f"'**' (power) at column {pos + 1} is not supported")
    for op in _OPS:
        if source.startswith(op, pos):
            return Token("op", op, pos, op)
    if char in "{}":
        raise FeelSyntaxError(f"'{char}' at column {pos + 1}: FEEL contexts are not supported")
    raise FeelSyntaxError(f"unexpected character {char!r} at column {pos + 1}")


def _name(source: str, pos: int) -> Token:
    end = pos
    while end < len(source) and (source[end].isalnum() or source[end] == "_"):
        end += 1
    text = source[pos:end]
    if text == "date":
        after = _DATE_AND_TIME.match(source, end)
        if after is not None:
            call_text = source[pos : after.end() - 1]
            return Token("func", call_text, pos, "date and time")
    rest = end
    while rest < len(source) and source[rest].isspace():
        rest += 1
    if text not in _NOT_CALLS and source.startswith("(", rest):
        return Token("func", source[pos:rest], pos, text)
    return Token("name", text, pos, text)


def _string(source: str, pos: int) -> Token:
    out: list[str] = []
    index = pos + 1
    while index < len(source):
        char = source[index]
        if char == '"':
            return Token("str", source[pos : index + 1], pos, "".join(out))
        if char == "\\":
            index, decoded = _escape(source, index)
            out.append(decoded)
            continue
        out.append(char)
        index += 1
    raise FeelSyntaxError(f"the string starting at column {pos + 1} is not closed with '\"'")


def _escape(source: str, index: int) -> tuple[int, str]:
    code = source[index + 1 : index + 2]
    if code in _ESCAPES:
        return index + 2, _ESCAPES[code]
    if code == "u":
        digits = source[index + 2 : index + 6]
        if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
            value = int(digits, 16)
            if not 0xD800 <= value <= 0xDFFF:
                return index + 6, chr(value)
    raise FeelSyntaxError(f"unknown escape '\\{code}' in a string at column {index + 1}")
