"""The entry points: read a definition file (``load_document``) and compile a document to a
``ProcessGraph`` (``compile_definition``), with the process-level keys (key, name, saga,
``historyTimeToLive``, the process's own listeners).

Validation happens before anything is stored, so a bad document never changes the database, and
every error names the element (node or flow id) so the author can find it. The per-scope work
is ``graph.GraphBuilder``'s; this module is what callers import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bpm.definitions.durations import MAX_DURATION, MAX_YEARS, parse_duration
from bpm.definitions.model import ListenerEvent, Node, NodeType, ProcessGraph
from bpm.definitions.parse.graph import GraphBuilder
from bpm.definitions.parse.keys import PROCESS_KEYS
from bpm.definitions.parse.listeners import parse_listeners
from bpm.definitions.parse.patterns import KEY_PATTERN, check_keys
from bpm.definitions.parse.policies import parse_saga
from bpm.definitions.parse.shape import check_metadata
from bpm.errors import InvalidDefinition

#: The longest ``historyTimeToLive``: the longest duration bpm reads (a century: Camunda models
#: write ``P36500D``), whether it is given in days or as a duration.
MAX_HISTORY_TTL = MAX_DURATION
DIGITS = re.compile(r"^[0-9]+$")


def load_document(path: str | Path) -> dict[str, Any]:
    """Read a JSON definition file, with an error that names the file and the line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidDefinition(f"{p}: cannot read the file ({exc.strerror})") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidDefinition(
            f"{p}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    if not isinstance(doc, dict):
        raise InvalidDefinition(f"{p}: a definition is a JSON object, got {type(doc).__name__}")
    return doc


def compile_definition(doc: Mapping[str, Any]) -> ProcessGraph:
    """Validate a definition document and compile it; raises ``InvalidDefinition``."""
    if not isinstance(doc, Mapping):
        raise InvalidDefinition("a definition is a JSON object")
    check_keys(doc, PROCESS_KEYS, "process", None)
    key = doc.get("key")
    if not isinstance(key, str) or not KEY_PATTERN.match(key):
        raise InvalidDefinition(
            f"process: 'key' must be a string matching {KEY_PATTERN.pattern}, got {key!r}"
        )
    name = doc.get("name", key)
    if not isinstance(name, str):
        raise InvalidDefinition(f"process {key!r}: 'name' must be a string")
    saga = parse_saga(doc, f"process {key!r}", None)
    history_ttl = _history_ttl(doc, f"process {key!r}")
    check_metadata(doc, f"process {key!r}", None)
    builder = GraphBuilder()
    builder.add_scope(doc, None)
    builder.check()
    own = parse_listeners(doc.get("listeners"), None, f"process {key!r}", None)
    starting = tuple(x for x in own if x.event is ListenerEvent.START)
    for node in list(builder.nodes.values()):  # the process starts as a start event of
        if starting and node.type is NodeType.START and node.scope is None:  # its does
            builder.nodes[node.id] = replace(node, listeners=starting + node.listeners)
    return ProcessGraph(
        key=key,
        name=name,
        saga=saga,
        nodes=builder.nodes,
        flows=builder.flows,
        starts=builder.starts,
        message_starts=builder.message_starts,
        timer_starts=tuple(builder.timer_starts),
        conditional_starts=tuple(builder.conditional_starts),
        has_conditions=_waits_for_a_condition(builder.nodes.values()),
        signal_starts=builder.signal_starts,
        document=json.loads(json.dumps(doc)),
        boundaries=builder.boundaries,
        history_ttl=history_ttl,
        end_listeners=tuple(x for x in own if x.event is ListenerEvent.END),
    )


def _history_ttl(raw: Mapping[str, Any], where: str) -> timedelta | None:
    """Camunda's ``historyTimeToLive``: whole days (an integer, or digits in a string as in
    BPMN XML) or a fixed-length ISO 8601 duration such as ``P30D``; absent: no TTL of its own."""
    if "historyTimeToLive" not in raw:
        return None
    value = raw["historyTimeToLive"]
    what = f"{where}: 'historyTimeToLive'"
    if isinstance(value, str) and DIGITS.match(value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InvalidDefinition(f"{what} must not be negative, got {value!r}")
        ttl = timedelta(days=min(value, MAX_HISTORY_TTL.days + 1))
    elif isinstance(value, str):
        ttl = parse_duration(value, where=what, element=None)
    else:
        raise InvalidDefinition(
            f"{what} must be a whole number of days (such as 30) or an ISO 8601 duration (such "
            f"as P30D), got {value!r}"
        )
    if ttl > MAX_HISTORY_TTL:
        raise InvalidDefinition(
            f"{what} must be at most {MAX_HISTORY_TTL.days} days ({MAX_YEARS} years), "
            f"got {raw['historyTimeToLive']!r}"
        )
    return ttl


def _waits_for_a_condition(nodes: Iterable[Node]) -> bool:
    """``ProcessGraph.has_conditions``: only then does a variable change cost a look at an
    instance's subscriptions. A conditional start of the process is none: no instance
    holds it."""
    return any(
        n.condition is not None and (n.scope is not None or n.type is not NodeType.START)
        for n in nodes
    )
