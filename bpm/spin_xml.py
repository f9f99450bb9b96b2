"""Spin's XML reads in JUEL: ``S(xmlText).childElement('x').textContent()``,
``.attr('a').value()``, ``.childElements('x')``, ``.name()``.

The text is parsed by ``defusedxml`` (as BPMN files are, :mod:`bpm.definitions.bpmn_xml`):
DTDs, entity declarations and external references are refused, so a variable can neither
expand an entity bomb nor make the engine fetch anything. Only reads are offered: a model that
builds or changes XML with Spin is refused at deploy like any method not on the allowlist. What
is left at the end of an expression is the element's XML text (:func:`bpm.juel_values.plain`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from xml.etree.ElementTree import Element, ParseError, tostring

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

#: The longest XML text ``S()`` parses (characters).
MAX_XML = 1_000_000
SPIN_XML_METHODS = frozenset(
    {"childElement", "childElements", "hasChild", "attr", "hasAttr", "attrNames",
     "textContent", "name", "namespace", "value", "toString"}
)  # fmt: skip


def parse(text: str) -> SpinXml:
    """The root element of ``text``; a ``ValueError`` saying why it is refused."""
    if len(text) > MAX_XML:
        raise ValueError(f"S() got XML longer than {MAX_XML} characters")
    try:
        root = fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise ValueError(f"S() refuses XML with a DTD or entities ({type(exc).__name__})") from None
    except ParseError as exc:
        raise ValueError(f"S() got text that is not XML: {exc}") from None
    return SpinXml(root)


def _split(tag: str) -> tuple[str | None, str]:
    if tag.startswith("{"):
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return None, tag


class SpinXml:
    """Spin's XML element node over an element of the parsed tree."""

    def __init__(self, element: Element) -> None:
        self.element = element

    def call(self, method: str, args: list[Any]) -> Any:
        fn = _ELEMENT.get(method)
        if fn is None:
            raise ValueError(f"a Spin XML element has no method '{method}'")
        return fn(self, *args)

    def children(self, name: str, namespace: str | None = None) -> list[SpinXml]:
        """Child elements called ``name`` (local name), in ``namespace`` when one is given."""
        found = []
        for child in self.element:
            ns, local = _split(child.tag)
            if local == name and (namespace is None or ns == namespace):
                found.append(SpinXml(child))
        return found

    def child(self, name: str, namespace: str | None = None) -> SpinXml:
        found = self.children(name, namespace)
        if len(found) != 1:
            count = "no" if not found else f"{len(found)}"
            raise ValueError(f"the XML element <{self.name()}> has {count} child elements <{name}>")
        return found[0]

    def attr(self, name: str, namespace: str | None = None) -> SpinAttribute:
        key = name if namespace is None else f"{{{namespace}}}{name}"
        if key not in self.element.attrib:
            raise ValueError(f"the XML element <{self.name()}> has no attribute {name!r}")
        return SpinAttribute(name, self.element.attrib[key])

    def name(self) -> str:
        return _split(self.element.tag)[1]

    def text(self) -> str:
        return "".join(self.element.itertext())

    def xml(self) -> str:
        return tostring(self.element, encoding="unicode")


class SpinAttribute:
    """An attribute of a Spin XML element: ``value()``, ``name()``."""

    def __init__(self, name: str, value: str) -> None:
        self.attr_name = name
        self.value = value

    def call(self, method: str, args: list[Any]) -> Any:
        if method in ("value", "stringValue", "toString") and not args:
            return self.value
        if method == "name" and not args:
            return self.attr_name
        raise ValueError(f"a Spin XML attribute has no method '{method}'")


_ELEMENT: Mapping[str, Callable[..., Any]] = {
    "childElement": SpinXml.child,
    "childElements": SpinXml.children,
    "hasChild": lambda s, name, ns=None: bool(s.children(name, ns)),
    "attr": SpinXml.attr,
    "hasAttr": lambda s, name: name in s.element.attrib,
    "attrNames": lambda s: [_split(k)[1] for k in s.element.attrib],
    "textContent": SpinXml.text,
    "name": SpinXml.name,
    "namespace": lambda s: _split(s.element.tag)[0],
    "toString": SpinXml.xml,
}
