"""JUEL text to Python: what ``${...}`` says, written so ``ast.parse`` reads it the same.

Apart from :mod:`bpm.expressions` because the translation is text work (quotes, operator
words, ``empty``) that does not depend on how the result is checked or evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from bpm.errors import InvalidExpression

#: JUEL's operator words and the symbols they stand for (``not`` binds like ``!``).
_WORDS: Mapping[str, str] = {
    "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!=",
    "and": "and", "or": "or", "not": "~", "div": "/", "mod": "%",
}  # fmt: skip
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_EXECUTION_READ = re.compile(
    r"""\bexecution\s*\.\s*getVariable(?:Local)?\s*\(\s*(['"])([A-Za-z_][A-Za-z0-9_]*)\1\s*\)"""
)


def execution_reads(text: str) -> str:
    """JUEL's ``execution.getVariable('x')`` (or ``getVariableLocal``) reads the variable
    ``x``, or null when the instance has none, as in Camunda; any other use of ``execution``
    stays a method call, which the validator refuses. Inside a string literal the text is
    left as it is."""
    out, last = [], 0
    for match in _EXECUTION_READ.finditer(text):
        if _inside_quotes(text, match.start()):
            continue
        out += [text[last : match.start()], f"getVariable('{match[2]}')"]
        last = match.end()
    return "".join(out) + text[last:]


def _inside_quotes(text: str, at: int) -> bool:
    quote, i = "", 0
    while i < at:
        ch = text[i]
        if quote and ch == "\\":
            i += 2
            continue
        if ch in "'\"" and (not quote or ch == quote):
            quote = "" if quote else ch
        i += 1
    return bool(quote)


def translate(text: str, context: str) -> tuple[str, str]:
    """Turn the inside of ``${...}`` into Python (and the same with ``!`` kept, for errors).

    ``&&``/``||`` become ``and``/``or`` outside string literals. ``!`` becomes ``~`` rather
    than ``not`` because ``~`` binds as tightly as JUEL's ``!`` (``!a == b`` is ``(!a) == b``);
    the parsed ``~`` become ``not``. A ``~`` the author wrote is refused. JUEL's operator
    words (``gt``, ``eq``, ``not``, ...) are its symbols; ``empty x`` is ``empty(x)``. A word
    after a ``.`` is a key (``order.gt``), not an operator.
    """
    out, shown, quote, i = [], [], "", 0
    while i < len(text):
        ch, pair, step, piece = text[i], text[i : i + 2], 1, text[i]
        word = None if quote else _IDENT.match(text, i)
        if quote:
            step = 2 if ch == "\\" else 1
            piece = text[i : i + step]
            quote = "" if ch == quote else quote
        elif word is not None:
            step, piece = len(word[0]), _word(text, i, word[0], context)
        elif pair in ("&&", "||"):
            step, piece = 2, " and " if pair == "&&" else " or "
        elif ch == "~":
            raise InvalidExpression(f"{context} uses the '~' operator, which is not allowed")
        else:
            quote = ch if ch in "'\"" else ""
            piece = "~" if ch == "!" and pair != "!=" else ch
        out.append(piece)
        shown.append("!" if piece == "~" else piece)
        i += step
    return _call_empty("".join(out).strip(), context), "".join(shown).strip()


def _word(text: str, at: int, word: str, context: str) -> str:
    """A name as written, or the symbol of a JUEL operator word (not after a ``.``)."""
    before = text[:at].rstrip()
    if before.endswith(".") or word not in (*_WORDS, "empty"):
        return word
    if word == "empty":
        return " \x00 "  # a marker, replaced by a call around its operand
    return f" {_WORDS[word]} "


def _call_empty(python: str, context: str) -> str:
    """``empty x`` -> ``empty(x)``: JUEL's ``empty`` is a unary operator over one operand (a
    name with its ``.key`` and ``[index]`` parts, a literal, or a parenthesised expression)."""
    while "\x00" in python:
        at = python.index("\x00")
        rest = python[at + 1 :].lstrip()
        end = _operand_end(rest)
        if end == 0:
            raise InvalidExpression(f"{context} uses 'empty' without an operand")
        python = f"{python[:at]}empty({rest[:end]}){rest[end:]}"
    return python


def _operand_end(text: str) -> int:
    """Where the operand at the start of ``text`` ends (0: there is none)."""
    i, depth, quote = 0, 0, ""
    while i < len(text):
        ch = text[i]
        if quote:
            i += 2 if ch == "\\" else 1
            quote = "" if ch == quote else quote
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and not (ch.isalnum() or ch in "_."):
            return i
        i += 1
    return i
