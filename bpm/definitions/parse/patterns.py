"""The vocabulary every part of the parser shares: what a key, id, name or topic may look
like, the largest whole number a column holds, and how a refusal names its element.

Its own module so the parts (graph, node fields, policies, listeners) depend on it and not on
each other; ``bpmn_events`` reads ``NAME_PATTERN`` and the engine ``TOPIC_PATTERN`` from here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bpm.errors import InvalidDefinition

KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
ID_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
#: A handler's (or connector's) name: a Python name's letters in any script (Camunda's
#: ``camunda:class="loan.Zielort_prüfen"`` names ``Zielort_prüfen``), digits, ``.:-``.
NAME_PATTERN = re.compile(r"^[^\W\d][\w.:-]*$")
#: ``NAME_PATTERN`` in words, for messages.
NAME_RULE = "a letter (of any script) or '_', then letters, digits and '_.:-'"
#: A message name: any text a person writes (Camunda's are free text, "Order received"),
#: without control characters or spaces at either end, at most 255 characters.
MESSAGE_PATTERN = re.compile(r"^(?=\S)[^\x00-\x1f\x7f]{1,255}(?<=\S)$")


#: The largest whole number a priority or version column holds (a 32-bit integer).
MAX_INT = 2**31 - 1


#: A topic is any text a worker subscribes by (Camunda's are free text: "Use API Key"), up
#: to 255 characters, without control characters or an expression (topics are fixed).
TOPIC_PATTERN = re.compile(r"^[^\x00-\x1f\x7f\s](?:[^\x00-\x1f\x7f]{0,253}[^\x00-\x1f\x7f\s])?$")


def check_keys(raw: Mapping[str, Any], allowed: set[str], where: str, element: str | None) -> None:
    """Refuse a key the element does not have (a misspelt key would otherwise do nothing),
    naming the keys it may have."""
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidDefinition(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})", element
        )


def node_label(node_id: str, kind: str) -> str:
    """How an error names a node: its id and its type."""
    return f"node {node_id!r} ({kind})"


def signal_name(
    raw: Mapping[str, Any], where: str, node_id: str, *, thrown: bool = False, caught: bool = False
) -> str:
    """A node's ``signal``: a literal name as a message's. ``${...}`` is evaluated when the
    token throws (``thrown``, ``nodes.signal_fields``) or, on a catching event (``caught``),
    for each waiting token when a signal is thrown (``bpm.definitions.signal_names``); a
    process's signal start event has no instance to evaluate it over, so it is refused there."""
    value = raw.get("signal")
    if not isinstance(value, str) or not MESSAGE_PATTERN.match(value):
        raise InvalidDefinition(
            f"{where}: 'signal' must be a name of 1 to 255 characters without control "
            "characters or spaces at either end",
            node_id,
        )
    if ("${" in value or "#{" in value) and not (thrown or caught):
        raise InvalidDefinition(
            f"{where}: signal {value!r} is an expression; a process's signal start event "
            "needs a literal name (there is no instance to evaluate it over yet)",
            node_id,
        )
    return value
