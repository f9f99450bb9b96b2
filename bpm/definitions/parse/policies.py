"""How a failed or undone activity is handled: its retry policy, its compensation (a handler, a
topic or a handler activity) and the saga scope of a process or subprocess.

Its own module because service tasks, user tasks, subprocesses and compensation handlers all
declare these the same way, and the rules (bounds on attempts, one kind of compensation) are
the same wherever they appear.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from bpm.definitions.durations import parse_duration
from bpm.definitions.model import Compensation, RetryPolicy
from bpm.definitions.parse.patterns import ID_PATTERN, NAME_PATTERN, check_keys
from bpm.errors import InvalidDefinition

COMPENSATION_KEYS = {"handler", "topic", "node", "retry"}
RETRY_KEYS = {"max_attempts", "backoff", "factor", "max_backoff", "delays"}
MAX_DELAYS = 1000
SAGA_SCOPES = {"none", "local", "global"}


def parse_saga(raw: Mapping[str, Any], where: str, element: str | None) -> str:
    saga = raw.get("saga", "none")
    if saga not in SAGA_SCOPES:
        raise InvalidDefinition(
            f"{where}: 'saga' must be none, local or global, got {saga!r}", element
        )
    return str(saga)


def parse_compensation(raw: Mapping[str, Any], where: str, node_id: str) -> Compensation | None:
    spec = raw.get("compensation")
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise InvalidDefinition(f"{where}: 'compensation' must be an object", node_id)
    check_keys(spec, COMPENSATION_KEYS, f"{where} 'compensation'", node_id)
    kinds = [k for k in ("handler", "topic", "node") if k in spec]
    if len(kinds) != 1:
        raise InvalidDefinition(
            f"{where}: 'compensation' needs exactly one of 'handler', 'topic' or 'node'", node_id
        )
    value = spec[kinds[0]]
    pattern = ID_PATTERN if kinds[0] == "node" else NAME_PATTERN
    if not isinstance(value, str) or not pattern.match(value):
        raise InvalidDefinition(
            f"{where}: compensation '{kinds[0]}' must be a name matching {pattern.pattern}", node_id
        )
    retry = parse_retry(spec.get("retry"), f"{where} compensation", node_id)
    return Compensation(**{kinds[0]: value}, retry=retry)


def parse_retry(raw: Any, where: str, node_id: str) -> RetryPolicy:
    if raw is None:
        return RetryPolicy()
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{where}: 'retry' must be an object", node_id)
    check_keys(raw, RETRY_KEYS, f"{where} 'retry'", node_id)
    attempts = raw.get("max_attempts", 1)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= 1000:
        raise InvalidDefinition(
            f"{where}: retry 'max_attempts' must be an integer 1..1000", node_id
        )
    delays = _delays(raw.get("delays"), where, node_id)
    if delays and ("backoff" in raw or "factor" in raw or "max_backoff" in raw):
        raise InvalidDefinition(
            f"{where}: retry 'delays' replaces 'backoff', 'factor' and 'max_backoff'; give one "
            f"or the others",
            node_id,
        )
    factor = raw.get("factor", 2.0)
    if not isinstance(factor, int | float) or isinstance(factor, bool) or not 1 <= factor <= 100:
        raise InvalidDefinition(f"{where}: retry 'factor' must be a number 1..100", node_id)
    default = RetryPolicy()
    backoff = (
        parse_duration(raw["backoff"], where=f"{where} retry 'backoff'", element=node_id)
        if "backoff" in raw
        else default.backoff
    )
    max_backoff = (
        parse_duration(raw["max_backoff"], where=f"{where} retry 'max_backoff'", element=node_id)
        if "max_backoff" in raw
        else max(default.max_backoff, backoff)
    )
    return RetryPolicy(attempts, backoff, float(factor), max_backoff, delays)


def _delays(raw: Any, where: str, node_id: str) -> tuple[timedelta, ...]:
    """The waits before the second, third, ... run; the last is used again when runs remain."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or len(raw) > MAX_DELAYS:
        raise InvalidDefinition(
            f"{where}: retry 'delays' must be a list of 1 to {MAX_DELAYS} durations", node_id
        )
    return tuple(parse_duration(d, where=f"{where} retry 'delays'", element=node_id) for d in raw)
