"""Timer event definitions of a BPMN file (``timeDuration``, ``timeDate``, ``timeCycle``):
Camunda's expressions, Zeebe's FEEL timers and SpiffWorkflow's Python-literal bodies, read
into the JSON definition's ``timer`` (``duration``, ``date`` or ``cycle``)."""

from __future__ import annotations

import re
from typing import Any

from bpm.definitions.bpmn_feel import FeelUnsupported, feel_timer
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.bpmn_xml import XmlElement

Mapped = dict[str, Any]


def timer(definition: XmlElement, owner: XmlElement) -> Mapped:
    reader = Reader(definition)
    duration = reader.child("timeDuration")
    date = reader.child("timeDate")
    cycle = reader.child("timeCycle")
    for part in (duration, date, cycle):
        if part is not None:
            Reader(part).finish()
    reader.finish()
    given = [(k, e) for k, e in (("duration", duration), ("date", date), ("cycle", cycle)) if e]
    if len(given) != 1:
        raise reject(owner, "needs exactly one of timeDuration, timeDate or timeCycle")
    key, element = given[0]
    value = element.text.strip()
    if key == "cycle":
        if value.startswith("="):
            raise reject(owner, f"has the FEEL timer cycle {value!r}", "write it without '='")
        return {key: "${" + value[2:] if value.startswith("#{") else value}
    if value.startswith("="):
        try:
            return {key: feel_timer(value)}
        except FeelUnsupported as exc:
            raise reject(owner, f"has the FEEL timer {value!r}: {exc}") from exc
    if value.startswith("#{") and value.endswith("}"):
        value = "${" + value[2:]
    return {key: _spiff_timer_body(value)}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_QUOTED = re.compile(r"""(["'])([^"'\\]*)\1""")


def _spiff_timer_body(value: str) -> str:
    """SpiffWorkflow reads every timer body as a Python expression: a quoted literal
    (``"PT1H"``) is the literal, a bare variable name (``due_time``) is that variable's value
    (``${due_time}``). Anything else stays as written for the timer parser to accept or refuse.
    An ISO duration such as ``PT5M`` also looks like a name; it stays a literal."""
    if quoted := _QUOTED.fullmatch(value):
        return quoted[2]
    if _NAME.fullmatch(value) and not _is_iso(value):
        return "${" + value + "}"
    return value


def _is_iso(value: str) -> bool:
    """Shaped like an ISO 8601 duration (``P1D``, ``PT5M``, ``P1M``): left for the timer parser,
    which accepts it or says why not."""
    return re.fullmatch(r"PT?\d.*", value) is not None
