"""Reading one BPMN element: the attributes and children a mapper consumes, the rest refused.

Every refusal has one shape, ``line N: <element> <why>[; <what to use instead>]``, where the
element is named by its qualified name and id, or, for an element without an id (an extension
element, an event definition), by its qualified name and the element it sits in:
``line 30: camunda:field in serviceTask 'charge' is not supported yet``. A refusal may list
several problems, one per line, so a user fixing a model sees them all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from bpm.definitions.bpmn_names import (
    BPMN,
    CAMUNDA,
    CAMUNDA_ALIASES,
    CAMUNDA_ELEMENT_ATTRIBUTES,
    CAMUNDA_IGNORED,
    CAMUNDA_UNREAD,
    HARMLESS,
    PREFIXES,
    PRESENTATIONAL,
    READ,
    READ_EXTENSIONS,
    USER_TASK_ONLY,
    XSI,
)
from bpm.definitions.bpmn_xml import XmlElement
from bpm.errors import InvalidDefinition

T = TypeVar("T")


def qualified(ns: str, local: str, root: XmlElement | None = None) -> str:
    """``camunda:field``, ``serviceTask`` (BPMN is the default namespace), ``{uri}tag``."""
    if ns in ("", BPMN):
        return local
    prefix = PREFIXES.get(ns) or (root.prefixes.get(ns) if root is not None else None)
    return f"{prefix}:{local}" if prefix else f"{{{ns}}}{local}"


def _root(el: XmlElement) -> XmlElement:
    while el.parent is not None:
        el = el.parent
    return el


def name(el: XmlElement) -> str:
    """How a refusal names ``el``: its type and id, else its type in the nearest element
    that has an id (``camunda:field in serviceTask 'charge'``)."""
    kind = qualified(el.ns, el.tag, _root(el))
    if el.attrib.get("id"):
        return f"{kind} {el.attrib['id']!r}"
    owner = el.parent
    while owner is not None and not owner.attrib.get("id"):
        owner = owner.parent
    if owner is None or owner.tag == "definitions":
        return kind
    return f"{kind} in {name(owner)}"


def problem(el: XmlElement, why: str, instead: str | None = None) -> str:
    """One refusal line."""
    hint = f"; {instead}" if instead else ""
    return f"line {el.line}: {name(el)} {why}{hint}"


def ignore(el: XmlElement, what: str) -> None:
    """Note that ``el`` has something the import accepts without behaviour (the file's
    ``ignored`` list, which ``bpm deploy --check`` prints)."""
    _root(el).ignored.append(problem(el, what))


def foreign(ns: str) -> bool:
    """Another vendor's namespace: ignored wherever it appears (and said so)."""
    return ns not in READ and ns not in PRESENTATIONAL


def ignore_element(el: XmlElement) -> None:
    ignore(el, f"is an element of the namespace {el.ns!r}, which bpm does not read")


def reject(el: XmlElement, why: str, instead: str | None = None) -> InvalidDefinition:
    return InvalidDefinition(problem(el, why, instead), _owner_id(el))


def refusal(
    problems: Iterable[str],
    element: str | None = None,
    elements: Mapping[str, str] | None = None,
) -> InvalidDefinition:
    """One error listing every problem, in the order found, each once; ``elements`` names
    the element of each problem line it knows."""
    lines = list(dict.fromkeys(problems))
    return InvalidDefinition("\n".join(lines), element, elements)


def problems_of(exc: InvalidDefinition) -> list[str]:
    return str(exc).splitlines()


class Gathered:
    """The refusals of several independent reads of one element, so a refused part does not
    leave the parts after it unread (and listed as unsupported when they are not)."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def attempt(self, step: Callable[[], T], instead: T) -> T:
        """``step()``, or ``instead`` with its refusal noted."""
        try:
            return step()
        except InvalidDefinition as exc:
            self.problems += problems_of(exc)
            return instead

    def check(self, element: str | None) -> None:
        """Raise one refusal listing every problem noted, if any."""
        if self.problems:
            raise refusal(self.problems, element)


def _owner_id(el: XmlElement | None) -> str | None:
    while el is not None:
        if el.attrib.get("id"):
            return el.attrib["id"]
        el = el.parent
    return None


def not_yet(el: XmlElement, instead: str | None = None) -> InvalidDefinition:
    """An element bpm does not read (yet): named with what it is."""
    what = {
        "multiInstanceLoopCharacteristics": " (multi-instance)",
        "standardLoopCharacteristics": " (loop)",
    }.get(el.tag, "")
    if el.ns != BPMN and el.ns not in PREFIXES:
        return reject(
            el,
            f"is an element of the namespace {el.ns!r}, which bpm does not read",
            instead or "remove it, or map what it does to a bpm: or camunda: attribute",
        )
    return reject(el, f"{what} is not supported yet".strip(), instead)


class Reader:
    """Reads one element and refuses whatever attribute or child it did not consume."""

    def __init__(self, el: XmlElement) -> None:
        self.el = el
        self.used: set[str] = {"id", "name"}
        self.used_children: set[int] = set()

    def attr(self, attr: str, ns: str = "") -> str | None:
        key = f"{{{ns}}}{attr}" if ns else attr
        self.used.add(key)
        return self.el.attrib.get(key)

    def children(self, tag: str, ns: str = BPMN) -> list[XmlElement]:
        found = [c for c in self.el.children if c.ns == ns and c.tag == tag]
        self.used_children.update(id(c) for c in found)
        return found

    def child(self, tag: str, ns: str = BPMN) -> XmlElement | None:
        found = self.children(tag, ns)
        if len(found) > 1:
            raise reject(found[1], f"appears more than once in {name(self.el)}")
        return found[0] if found else None

    def extensions(self, tag: str, ns: str) -> list[XmlElement]:
        """Every ``tag`` in the element's ``extensionElements``, marked as read."""
        found = [
            child
            for ext in self.el.children
            if ext.ns == BPMN and ext.tag == "extensionElements"
            for child in ext.children
            if child.ns == ns and child.tag == tag
        ]
        self.used_children.update(id(c) for c in found)
        return found

    def extension(self, tag: str, ns: str) -> XmlElement | None:
        found = self.extensions(tag, ns)
        if len(found) > 1:
            raise reject(found[1], f"appears more than once in {name(self.el)}")
        return found[0] if found else None

    def leftovers(self, *, extensions_only: bool = False) -> list[str]:
        """A refusal line for every attribute and child nobody read (after a refusal, only
        for the extension elements: the rest may be unread because the mapper stopped)."""
        el = self.el
        out = [
            problem(el, f"has the attribute {shown}={value!r}, which is not supported yet")
            for shown, value in self._unread_attributes()
            if not extensions_only
        ]
        for child in el.children:
            if id(child) in self.used_children or child.ns in PRESENTATIONAL:
                continue
            # a group's category: how a diagram is grouped, no behaviour in Camunda 7 either
            if child.ns == BPMN and child.tag in {
                "documentation",
                "incoming",
                "outgoing",
                "categoryValueRef",
            }:
                continue
            if child.ns == BPMN and child.tag == "extensionElements":
                for ext in child.children:
                    if id(ext) in self.used_children or ext.ns in PRESENTATIONAL:
                        continue
                    if extensions_only and ext.tag in READ_EXTENSIONS and not foreign(ext.ns):
                        continue  # the refused mapper would have read it: not the cause
                    self.used_children.add(id(ext))
                    if foreign(ext.ns):
                        ignore_element(ext)
                    else:
                        out.append(str(not_yet(ext)))
                continue
            if foreign(child.ns):
                self.used_children.add(id(child))
                ignore_element(child)
            elif not extensions_only:
                out.append(str(not_yet(child)))
        return out

    def finish(self) -> None:
        found = self.leftovers()
        if found:
            raise refusal(found, _owner_id(self.el))

    def _unread_attributes(self) -> list[tuple[str, str]]:
        out = []
        for key, value in self.el.attrib.items():
            if key in self.used:
                continue
            ns, _, local = key[1:].partition("}") if key.startswith("{") else ("", "", key)
            if ns in PRESENTATIONAL or ns == XSI or (ns == CAMUNDA and local in CAMUNDA_IGNORED):
                continue
            allowed = HARMLESS.get(local, frozenset()) if not ns else frozenset()
            if not ns and local in HARMLESS and (allowed is None or value in allowed):
                continue
            shown = qualified(ns, local, _root(self.el))
            if not ns and local not in CAMUNDA_ELEMENT_ATTRIBUTES.get(self.el.tag, {local}):
                if self.el.ns == CAMUNDA:
                    self.used.add(key)
                    ignore(
                        self.el,
                        f"has the attribute {shown}={value!r}, which Camunda 7 "
                        "does not define there either",
                    )
                    continue
            if ns == CAMUNDA and local in CAMUNDA_UNREAD:
                self.used.add(key)
                ignore(self.el, f"has the attribute {shown}={value!r}, {CAMUNDA_UNREAD[local]}")
                continue
            if foreign(ns) or (ns == CAMUNDA and local in USER_TASK_ONLY):
                self.used.add(key)
                why = (
                    f"in another vendor's namespace {ns!r}"
                    if foreign(ns)
                    else "which Camunda 7 reads on a user task only"
                )
                ignore(self.el, f"has the attribute {shown}={value!r}, {why}")
                continue
            out.append((shown, value))
        return out


def read_aliases_as_camunda(root: XmlElement) -> XmlElement:
    """Elements and attributes in ``CAMUNDA_ALIASES`` become Camunda's, everywhere."""
    todo = [root]
    while todo:
        el = todo.pop()
        if el.ns in CAMUNDA_ALIASES:
            el.ns = CAMUNDA
        if any(key.startswith("{") for key in el.attrib):
            el.attrib = {_camunda_key(key): value for key, value in el.attrib.items()}
        todo.extend(el.children)
    return root


def _camunda_key(key: str) -> str:
    ns, _, local = key[1:].partition("}") if key.startswith("{") else ("", "", key)
    return f"{{{CAMUNDA}}}{local}" if ns in CAMUNDA_ALIASES else key
