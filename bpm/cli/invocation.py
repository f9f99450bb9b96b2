"""How the user can run ``bpm`` again, for the commands the CLI suggests.

``make demo`` runs ``.venv/bin/bpm demo``: the virtualenv is not activated, so a hint that says
``bpm instances`` fails with "command not found". A hint names the command the way it works
from the user's shell: ``bpm`` when that is the script running now, else the path of the
running script (as it was typed, so ``.venv/bin/bpm`` stays short), else the interpreter with
``-m bpm.cli``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

SCRIPT_NAMES = frozenset({"bpm", "bpm.exe"})


@dataclass(frozen=True)
class Invocation:
    """What to type to run bpm, and how to make plain ``bpm`` work when it does not."""

    #: ``bpm``, ``.venv/bin/bpm`` or ``/usr/bin/python3 -m bpm.cli``, quoted for a shell.
    command: str
    #: ``source .venv/bin/activate`` when the script sits in a virtualenv that is not active.
    activate: str | None = None


def bpm_invocation(argv0: str | None = None, search_path: str | None = None) -> Invocation:
    """How to run the bpm that is running now; ``argv0`` defaults to ``sys.argv[0]`` and
    ``search_path`` to ``PATH``."""
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    if script.name not in SCRIPT_NAMES or not script.is_file():
        # ``python -m bpm.cli`` or a program that embeds the CLI: the script of this
        # interpreter's installation, if it has one.
        script = Path(sys.executable).parent / "bpm"
        if not script.is_file():
            return Invocation(f"{shlex.quote(sys.executable)} -m bpm.cli")
        script = script.absolute()
    on_path = shutil.which("bpm", path=search_path)
    if on_path is not None and _same_file(Path(on_path), script):
        return Invocation("bpm")
    activate = script.parent / "activate"
    return Invocation(
        _shell_path(script), f"source {_shell_path(activate)}" if activate.is_file() else None
    )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _shell_path(path: Path) -> str:
    """A path a shell runs as a file: a relative one needs a directory part (``bin/bpm``),
    else the shell would look it up on PATH."""
    text = str(path)
    if os.sep not in text and (os.altsep is None or os.altsep not in text):
        text = os.path.join(os.curdir, text)
    return shlex.quote(text)
