"""``multiInstanceLoopCharacteristics`` to the JSON format's ``multiInstance`` object, as
Camunda 7 and Zeebe write it: ``isSequential``, ``loopCardinality``, ``completionCondition``,
Camunda's ``camunda:collection`` and ``camunda:elementVariable`` (or BPMN's
``loopDataInputRef`` and ``inputDataItem``), Zeebe's ``zeebe:loopCharacteristics``.

Read through a ``Reader``, so anything with behaviour bpm does not give (another
``behavior``, ``complexBehaviorDefinition``, ``loopDataOutputRef``) is refused naming the
element. ``camunda:asyncBefore``/``asyncAfter`` are accepted as on any node and
``camunda:failedJobRetryTimeCycle`` is checked: neither has a job to govern here
(docs/bpmn.md).
"""

from __future__ import annotations

import re
from typing import Any

from bpm.definitions.bpmn_camunda import retry_cycle
from bpm.definitions.bpmn_feel import FeelUnsupported, feel_to_condition, translate_condition
from bpm.definitions.bpmn_names import CAMUNDA, FOX, ZEEBE
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.bpmn_xml import XmlElement
from bpm.definitions.mappings import VARIABLE_NAME

Mapped = dict[str, Any]
#: ``${items.elements()}`` and ``${S(items).elements()}``: Camunda Spin's list of a JSON
#: array; a JSON array variable is a list here already, so it is the variable itself.
_SPIN_ELEMENTS = re.compile(
    r"\s*\$\{\s*(?:S\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))\.elements\(\)\s*\}\s*"
)
#: Node types (of the definition document) that may be multi-instance: the activities.
MULTI_INSTANCE_TYPES = frozenset(
    {"serviceTask", "userTask", "receiveTask", "subProcess", "callActivity", "task", "manualTask"}
)

#: Loop markers: a subprocess's own, read (or refused) by its node's reader, not body nodes.
LOOPS = ("multiInstanceLoopCharacteristics", "standardLoopCharacteristics")


def multi_instance(r: Reader, kind: str | None) -> Mapped:
    """The element's loop characteristics as ``{"multiInstance": {...}}`` (empty when it has
    none); on a node that is not an activity bpm runs, it is left for the refusal of unread
    children."""
    if kind not in MULTI_INSTANCE_TYPES:
        return {}
    el = r.child("multiInstanceLoopCharacteristics")
    if el is None:
        return {}
    mr = Reader(el)
    out: Mapped = {}
    sequential = mr.attr("isSequential")
    if sequential not in (None, "true", "false"):
        raise reject(el, f"has isSequential={sequential!r}", "write true or false")
    if sequential == "true":
        out["sequential"] = True
    behavior = mr.attr("behavior")
    if behavior not in (None, "All"):
        raise reject(
            el,
            f"has behavior={behavior!r}; only 'All' (Camunda's and the default) is supported",
            "use a completionCondition",
        )
    cardinality = mr.child("loopCardinality")
    if cardinality is not None:
        Reader(cardinality).finish()
        out["cardinality"] = _text(cardinality)
    _collection(mr, el, out)
    condition = mr.child("completionCondition")
    if condition is not None:
        cr = Reader(condition)
        language = (cr.attr("language") or "juel").strip()
        cr.finish()
        if language.lower() not in {"juel", "feel", "${juel}"}:
            raise reject(
                condition,
                f"is written in {language}, which bpm never runs as a completion condition",
                "write it as JUEL ${...}, FEEL =... or a plain condition",
            )
        try:
            out["completionCondition"] = translate_condition(_text(condition))
        except FeelUnsupported as exc:
            raise reject(condition, f"cannot be translated: {exc}") from None
    _zeebe(mr, out)
    cycles = [*mr.extensions("failedJobRetryTimeCycle", CAMUNDA)]
    cycles += mr.extensions("failedJobRetryTimeCycle", FOX)
    for cycle in cycles:  # checked; it governs Camunda's asynchronous job, none here
        Reader(cycle).finish()
        retry_cycle(cycle)
    mr.finish()
    return {"multiInstance": out}


def _collection(mr: Reader, el: XmlElement, out: Mapped) -> None:
    """Camunda's attributes, or the standard ``loopDataInputRef`` and ``inputDataItem``."""
    collection = mr.attr("collection", CAMUNDA)
    element = mr.attr("elementVariable", CAMUNDA)
    ref = mr.child("loopDataInputRef")
    item = mr.child("inputDataItem")
    if ref is not None:
        Reader(ref).finish()
        if collection is not None:
            raise reject(el, "has both camunda:collection and loopDataInputRef", "keep one")
        collection = _text(ref)
    if item is not None:
        ir = Reader(item)
        name = ir.attr("name")
        ir.finish()
        if element is not None:
            raise reject(el, "has both camunda:elementVariable and inputDataItem", "keep one")
        element = name
    if collection is not None:
        spin = _SPIN_ELEMENTS.fullmatch(collection)
        out["collection"] = (spin[1] or spin[2]) if spin else collection.strip()
    if element is not None:
        out["elementVariable"] = element.strip()


def _zeebe(mr: Reader, out: Mapped) -> None:
    """``zeebe:loopCharacteristics``: FEEL ``=name`` or a simple FEEL expression."""
    zeebe = mr.extension("loopCharacteristics", ZEEBE)
    if zeebe is None:
        return
    zr = Reader(zeebe)
    for attr, key, expression in (
        ("inputCollection", "collection", True),
        ("inputElement", "elementVariable", False),
        ("outputCollection", "outputCollection", False),
        ("outputElement", "outputElement", True),
    ):
        value = zr.attr(attr)
        if value is None:
            continue
        if key in out:
            raise reject(zeebe, f"sets {attr}, which the element already has", "keep one")
        out[key] = _feel(zeebe, attr, value) if expression else value.strip()
    zr.finish()


def _feel(el: XmlElement, attr: str, text: str) -> str:
    """A FEEL value: a bare name stays one (a variable), anything else is translated."""
    body = text.strip().removeprefix("=").strip()
    if VARIABLE_NAME.fullmatch(body):
        return body
    try:
        return "${" + feel_to_condition(body) + "}"
    except FeelUnsupported as exc:
        raise reject(el, f"has {attr}={text!r}, which cannot be translated: {exc}") from None


def _text(el: XmlElement) -> str:
    text = (el.text or "").strip()
    if not text:
        raise reject(el, "is empty")
    return text
