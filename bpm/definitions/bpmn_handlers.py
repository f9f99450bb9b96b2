"""Handler names from what a Camunda model names its code by: a Java class, an expression, a
script resource. The code is never run; a handler registered under the name runs instead."""

from __future__ import annotations

import re

_HANDLER_CHARS = re.compile(r"[^A-Za-z0-9_.:-]+")


def handler_name(text: str) -> str:
    """A valid handler name from a Camunda expression: ``${bean.run(execution)}`` ->
    ``bean.run_execution``."""
    inner = text.strip()
    if len(inner) >= 3 and inner[0] in "$#" and inner[1] == "{" and inner.endswith("}"):
        inner = inner[2:-1]
    name = _HANDLER_CHARS.sub("_", inner.strip()).strip("_.:-")
    if not name or not (name[0].isalpha() or name[0] == "_") or not name.isascii():
        name = "_" + name
    return name


def script_stem(resource: str | None) -> str | None:
    """``deployment://scripts/calc-total.groovy`` -> ``calc-total``."""
    if not resource or not resource.strip():
        return None
    last = resource.strip().rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return last.rsplit(".", 1)[0] or None
