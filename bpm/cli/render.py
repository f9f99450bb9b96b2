"""Output for humans and for scripts.

A terminal gets rich tables and coloured states; a pipe or a file gets plain, aligned text
without escape codes, so ``bpm instances | grep FAILED`` works. ``--json`` output is always one
JSON document on stdout, whatever stdout is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

STATE_STYLES = {
    "COMPLETED": "green",
    "DONE": "green",
    "RUNNING": "cyan",
    "ACTIVE": "cyan",
    "WAITING": "yellow",
    "READY": "yellow",
    "LOCKED": "yellow",
    "FAILED": "bold red",
    "OPEN": "bold red",
    "TERMINATED": "magenta",
    "CANCELLED": "dim",
    "RESOLVED": "dim",
}


@dataclass(frozen=True)
class Glyphs:
    """Arrows and tree lines; ASCII stand-ins when stdout cannot encode Unicode."""

    arrow: str
    branch: str
    last: str
    pipe: str
    cross: str


UNICODE = Glyphs("→", "├─ ", "└─ ", "│  ", "✗")
ASCII = Glyphs("->", "|- ", "`- ", "|  ", "x")


def glyphs() -> Glyphs:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    return UNICODE if encoding in ("utf8", "utf16", "utf32") else ASCII


def is_terminal() -> bool:
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def emit_json(document: object) -> None:
    click.echo(json.dumps(document, indent=2, default=str))


def line(text: str = "", *, style: str | None = None) -> None:
    """One line of prose; ``style`` (rich syntax) applies on a terminal only."""
    if style and is_terminal():
        _console().print(text, style=style, markup=False, highlight=False, soft_wrap=True)
    else:
        click.echo(text)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, empty: str = "(none)"
) -> None:
    if not rows:
        click.echo(empty)
    elif is_terminal():
        _rich_table(headers, rows)
    else:
        _plain_table(headers, rows)


def key_values(pairs: Sequence[tuple[str, object]]) -> None:
    width = max((len(k) for k, _ in pairs), default=0)
    for key, value in pairs:
        line(f"{key + ':':<{width + 1}} {_cell(value)}")


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _plain_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    for row in [list(headers), *cells]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _rich_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    out = Table(*headers, header_style="bold", box=None, pad_edge=False)
    for row in rows:
        out.add_row(*(Text(_cell(v), style=STATE_STYLES.get(_cell(v), "")) for v in row))
    console = _console()
    natural = console.measure(out, options=console.options.update_width(10_000)).maximum
    if natural > console.width:  # ids must stay whole and copyable: let the terminal wrap
        console = Console(file=sys.stdout, width=natural)
    console.print(out)


def _console() -> Console:
    return Console(file=sys.stdout)


def state_style(state: str) -> str | None:
    return STATE_STYLES.get(state)
