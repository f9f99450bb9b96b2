"""The declarations of a BPMN file (``message``, ``error``, ``signal``, ``escalation``,
``itemDefinition``): what events refer to by id.

A declaration is read like any element: an attribute or extension it does not understand is
refused, never dropped, because some carry behaviour (a payload, a variable to fill).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bpm.definitions.bpmn_names import BPMN, CAMUNDA, PRESENTATIONAL
from bpm.definitions.bpmn_reader import (
    Reader,
    foreign,
    ignore_element,
    not_yet,
    problems_of,
    reject,
)
from bpm.definitions.bpmn_xml import XmlElement
from bpm.definitions.parse.patterns import MESSAGE_PATTERN
from bpm.errors import InvalidDefinition

#: Top-level elements that are neither a process nor a declaration, read for no behaviour.
_PLAIN = {
    "collaboration",
    "documentation",
    "extensionElements",
    "category",
    "interface",
    "resource",
    "import",
    "relationship",
}
#: What each declaration may carry besides ``id`` and ``name``.
_ATTRIBUTES = {
    "message": ("itemRef",),
    "error": ("errorCode", "structureRef"),
    "signal": ("structureRef",),
    "escalation": ("escalationCode", "structureRef"),
    "itemDefinition": ("structureRef", "itemKind", "isCollection", "import"),
    "dataStore": ("itemSubjectRef", "capacity", "isUnlimited"),
}


@dataclass(frozen=True)
class ErrorDeclaration:
    code: str | None
    #: ``camunda:errorMessage``: the message an error end event throws with.
    message: str | None = None


class Declarations:
    """Messages, errors, escalations and signals by id; the other declarations (item
    definitions, data stores) are checked, and nothing looks them up yet."""

    def __init__(self, root: XmlElement, problems: list[str]) -> None:
        self.messages: dict[str, str] = {}
        self.errors: dict[str, ErrorDeclaration] = {}
        #: escalation id -> its escalationCode (None: none given)
        self.escalations: dict[str, str | None] = {}
        #: signal id -> its name (its id when it has none)
        self.signals: dict[str, str] = {}
        for child in root.children:
            if child.ns in PRESENTATIONAL or (child.ns == BPMN and child.tag in _PLAIN):
                continue
            if child.ns == BPMN and child.tag == "process":
                continue
            if foreign(child.ns):
                ignore_element(child)
                continue
            try:
                self._declare(child)
            except InvalidDefinition as exc:
                problems.extend(problems_of(exc))

    def _declare(self, el: XmlElement) -> None:
        if el.ns != BPMN or el.tag not in _ATTRIBUTES:
            raise not_yet(el)
        reader = Reader(el)
        values = {attr: reader.attr(attr) for attr in _ATTRIBUTES[el.tag]}
        key = el.attrib.get("id", "")
        label = el.attrib.get("name") or key
        if el.tag == "message":
            self.messages[key] = label
        elif el.tag == "error":
            message = reader.attr("errorMessage", CAMUNDA)
            self.errors[key] = ErrorDeclaration(values["errorCode"], message)
        elif el.tag == "escalation":
            self.escalations[key] = values["escalationCode"]
        elif el.tag == "signal":
            self.signals[key] = label
        elif el.tag == "dataStore":
            for state in reader.children("dataState"):  # for people, as on a reference
                Reader(state).finish()
        reader.finish()

    @staticmethod
    def resolve(ref: str, declared: Mapping[str, Any]) -> str:
        """A reference written as a QName (``tns:myError``) names the declaration with that
        local id when the file declares one."""
        local = local_id(ref)
        return local if ref not in declared and local in declared else ref


def local_id(ref: str) -> str:
    """``tns:task`` -> ``task``: element references may carry a namespace prefix."""
    return ref.rsplit(":", 1)[-1]


def message(decl: Declarations, el: XmlElement, ref: str | None) -> str:
    """The message name an element's ``messageRef`` stands for (its own id without one)."""
    if not ref:
        return el.attrib.get("id", "")  # no message: correlate by the element's own id
    ref = decl.resolve(ref, decl.messages)
    if ref not in decl.messages:
        raise reject(
            el,
            f"refers to message {ref!r}, which the file does not declare",
            f'add <message id="{ref}" name="..."/>',
        )
    name = decl.messages[ref]
    if "${" in name or "#{" in name or name.startswith("="):
        raise reject(
            el,
            f"refers to message {ref!r} named {name!r}: expressions in message "
            f"names are not supported yet",
            "use a fixed name and correlate by business key or variables",
        )
    if not MESSAGE_PATTERN.match(name):
        raise reject(
            el,
            f"refers to message {ref!r} named {name!r}, which is not a name the engine "
            f"correlates by (1 to 255 characters, no control characters or spaces at either end)",
            "rename the message",
        )
    return name
