"""Execution and task listeners (``listeners`` on the process, a flow or a node): which events
each element has, and the handler and fields each listener runs with.

Its own module because the process, flows and every node type read listeners the same way,
only the events they allow differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.code import CODE_KEYS, parse_code
from bpm.definitions.mappings import parse_mappings
from bpm.definitions.model import GATEWAYS, Listener, ListenerEvent, NodeType
from bpm.definitions.parse.patterns import NAME_PATTERN, NAME_RULE, check_keys
from bpm.definitions.timers import TIMER_KINDS, TimerSpec, parse_timer
from bpm.errors import InvalidDefinition

#: The events a listener may name, by node type (user tasks add their task events); a
#: parallel gateway has none (it is left by forks and joins, not by one token).
_NODE_EVENTS = (ListenerEvent.START, ListenerEvent.END)
_USER_TASK_EVENTS = (
    ListenerEvent.ASSIGNMENT,
    ListenerEvent.CREATE,
    ListenerEvent.COMPLETE,
    ListenerEvent.DELETE,
    ListenerEvent.UPDATE,
    ListenerEvent.TIMEOUT,
)
LISTENER_KEYS = {"event", "handler", "fields", "timer", *CODE_KEYS}


def parse_listeners(
    raw: Any,
    node_type: NodeType | None,
    where: str,
    node_id: str | None,
    *,
    on_flow: bool = False,
    joins: bool = False,
) -> tuple[Listener, ...]:
    """``listeners``: a list of ``{"event", "handler", "fields"}``, run in list order for
    each event. ``node_type`` None: the process's own (``start`` and ``end``), or with
    ``on_flow`` a flow's (``take`` only). A parallel gateway that only forks takes ``start``
    (it starts once); one that ``joins`` takes none (which of its arrivals would start it?)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidDefinition(f"{where}: 'listeners' must be a list", node_id)
    if on_flow:
        allowed: tuple[ListenerEvent, ...] = (ListenerEvent.TAKE,)
    elif node_type is None:
        allowed = (ListenerEvent.START, ListenerEvent.END)
    elif node_type is NodeType.PARALLEL and joins:
        allowed = ()
    elif node_type in GATEWAYS:
        allowed = (ListenerEvent.START,)
    elif node_type is NodeType.END:
        allowed = (ListenerEvent.START, ListenerEvent.END)
    else:
        allowed = _NODE_EVENTS + (_USER_TASK_EVENTS if node_type is NodeType.USER_TASK else ())
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise InvalidDefinition(f"{where}: every listener is an object", node_id)
        check_keys(item, LISTENER_KEYS, f"{where} listener", node_id)
        event = item.get("event")
        if event not in {e.value for e in allowed}:
            names = ", ".join(e.value for e in allowed) or "none"
            raise InvalidDefinition(
                f"{where}: listener event {event!r} is not one this node has (it has: {names})",
                node_id,
            )
        code = parse_code(item, f"{where} {event} listener", node_id)
        handler = item.get("handler") if code is None else code.kind.value
        if (
            not isinstance(handler, str)
            or not NAME_PATTERN.match(handler)
            or (code is not None and "handler" in item)
        ):
            raise InvalidDefinition(
                f"{where}: listener 'handler' must be a name: {NAME_RULE} "
                f"(or give 'expression', 'delegateExpression' or 'script' instead)",
                node_id,
            )
        fields = parse_mappings(item.get("fields"), "fields", f"{where} listener", node_id or "")
        timer = _listener_timer(item, where)
        out.append(Listener(ListenerEvent(event), handler, fields, timer, code))
    return tuple(out)


def _listener_timer(item: Mapping[str, Any], where: str) -> TimerSpec | None:
    """A ``timeout`` listener's ``timer`` (``duration`` or ``date``), which no other has."""
    raw = item.get("timer")
    if (raw is None) != (item.get("event") != ListenerEvent.TIMEOUT):
        raise InvalidDefinition(
            f"{where}: a listener has a 'timer' exactly when its event is 'timeout'"
        )
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{where}: a timeout listener's 'timer' must be an object")
    check_keys(raw, set(TIMER_KINDS), f"{where} timeout listener timer", None)
    return parse_timer(raw, f"{where} timeout listener", "")
