"""Bounds on what a DMN file may hold, so a hostile or broken file is refused before it costs
much time or memory. Each is far above what a decision table drawn by a person needs."""

from __future__ import annotations

#: Decisions in one file.
MAX_DECISIONS = 1_000
#: Rules in one decision table.
MAX_RULES = 10_000
#: Input columns, and output columns, in one decision table.
MAX_INPUTS = 100
MAX_OUTPUTS = 100
#: Characters in one expression or cell.
MAX_EXPRESSION_CHARS = 8_000
#: Parentheses, ``not(...)`` and function calls nested inside one expression.
MAX_NESTING = 32
#: Characters in one number literal (FEEL numbers are decimals, not arbitrary-size integers).
MAX_NUMBER_CHARS = 40
#: Bits in an integer computed by an expression (about 300 decimal digits).
MAX_INT_BITS = 1_000
#: Problems listed in one refusal; the rest are counted.
MAX_PROBLEMS = 50
