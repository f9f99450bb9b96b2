"""A reference to a DMN decision (``decision`` on a service task): its key, which version it
binds to, and how its result maps to variables.

Its own module because a decision reference is a small language of its own (bindings,
``mapResult`` modes) that is read wherever a decision is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import DecisionBinding, DecisionRef
from bpm.definitions.parse.patterns import KEY_PATTERN, MAX_INT, check_keys
from bpm.errors import InvalidDefinition

DECISION_KEYS = {"key", "binding", "version", "versionTag", "mapResult"}
MAP_RESULTS = ("resultList", "singleEntry", "singleResult", "collectEntries")


def parse_decision_ref(raw: Any, where: str, node_id: str) -> DecisionRef:
    """``decision``: ``{"key": ..., "binding": "latest"|"version"|"versionTag", ...}``."""
    if isinstance(raw, str):
        raw = {"key": raw}
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{where}: 'decision' must be a decision key or an object", node_id)
    check_keys(raw, DECISION_KEYS, f"{where} 'decision'", node_id)
    key = raw.get("key")
    if not isinstance(key, str) or not KEY_PATTERN.match(key):
        raise InvalidDefinition(
            f"{where}: decision 'key' must match {KEY_PATTERN.pattern}, got {key!r}", node_id
        )
    try:
        binding = DecisionBinding(raw.get("binding", "latest"))
    except ValueError:
        raise InvalidDefinition(
            f"{where}: decision 'binding' must be latest, version, versionTag or deployment, got "
            f"{raw.get('binding')!r}",
            node_id,
        ) from None
    version, tag = raw.get("version"), raw.get("versionTag")
    if binding is DecisionBinding.VERSION and (
        not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= MAX_INT
    ):
        raise InvalidDefinition(
            f"{where}: decision binding 'version' needs a 'version' >= 1", node_id
        )
    if binding is DecisionBinding.VERSION_TAG and (not isinstance(tag, str) or not tag):
        raise InvalidDefinition(
            f"{where}: decision binding 'versionTag' needs a 'versionTag'", node_id
        )
    mode = raw.get("mapResult", "resultList")
    if mode not in MAP_RESULTS:
        raise InvalidDefinition(
            f"{where}: decision 'mapResult' must be one of {', '.join(MAP_RESULTS)}, got {mode!r}",
            node_id,
        )
    return DecisionRef(
        key,
        binding,
        version if binding is DecisionBinding.VERSION else None,
        tag if binding is DecisionBinding.VERSION_TAG else None,
        mode,
    )
