"""Every failure ends as one line on stderr, ``error: <message>``, and a non-zero exit code.

A refused definition may list several problems, one per line: each gets a line of its own,
``error: FILE: line N: ...``, so a user sees them all and a tool reads them one by one.

Scripts parse stdout, and a traceback is noise to an operator who mistyped an id. The one
exception to the rule is an unexpected error (a bug): ``BPM_DEBUG=1`` re-raises it so the
traceback can be reported.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click
from sqlalchemy.exc import SQLAlchemyError

from bpm.errors import BpmError, InvalidDefinition

DEBUG_ENV = "BPM_DEBUG"
USAGE_EXIT = 2
INTERRUPTED_EXIT = 130


def one_line(text: str) -> str:
    parts = [part.strip() for part in text.splitlines() if part.strip()]
    return " ".join(parts) or "unknown error"


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"error: {one_line(message)}", err=True)
    sys.exit(code)


def usage_message(exc: click.ClickException) -> str:
    message = exc.format_message()
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return message


def report(exc: BaseException) -> NoReturn:
    """Print ``exc`` as one ``error:`` line and exit with a code that fits it."""
    if isinstance(exc, click.ClickException):
        fail(usage_message(exc), exc.exit_code)
    if isinstance(exc, click.Abort | KeyboardInterrupt):
        fail("interrupted", INTERRUPTED_EXIT)
    if isinstance(exc, InvalidDefinition):
        lines = [part.strip() for part in str(exc).splitlines() if part.strip()]
        for line in lines[:-1]:
            click.echo(f"error: {line}", err=True)
        fail(lines[-1] if lines else str(exc))
    if isinstance(exc, BpmError):
        fail(str(exc))
    if os.environ.get(DEBUG_ENV):
        raise exc
    if isinstance(exc, SQLAlchemyError):
        orig = getattr(exc, "orig", None) or exc
        fail(f"database error: {type(orig).__name__}: {orig}")
    fail(f"unexpected {type(exc).__name__}: {exc} (run with {DEBUG_ENV}=1 for the traceback)")
