"""Hardened XML reading for the BPMN importer: a small element tree that keeps source lines.

The XML is parsed by ``defusedxml``'s expat parser with DTDs, entity declarations and external
references all forbidden, so an entity bomb or an external entity is refused before it expands
or fetches anything. Every problem (too large, too deep, malformed, forbidden construct) becomes
``InvalidDefinition`` with the line and column where expat stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import ParseError
from xml.parsers.expat import ExpatError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from bpm.errors import InvalidDefinition

#: The largest BPMN file accepted, in bytes (UTF-8).
MAX_BYTES = 5 * 1024 * 1024
#: The deepest element nesting accepted (subprocesses inside subprocesses, extension elements).
MAX_DEPTH = 100


@dataclass
class XmlElement:
    """One element: namespace, local name, attributes (``{ns}name`` for prefixed ones)."""

    ns: str
    tag: str
    attrib: dict[str, str]
    line: int
    children: list[XmlElement] = field(default_factory=list)
    text: str = ""

    def find(self, ns: str, tag: str) -> XmlElement | None:
        return next((c for c in self.children if c.ns == ns and c.tag == tag), None)


def _split(name: str) -> tuple[str, str]:
    if name.startswith("{"):
        ns, _, local = name[1:].partition("}")
        return ns, local
    return "", name


class _Builder:
    """The parser's target: builds ``XmlElement``s, reading the line from the expat parser."""

    def __init__(self) -> None:
        self.parser: DefusedXMLParser | None = None
        self.stack: list[XmlElement] = []
        self.root: XmlElement | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise InvalidDefinition(
                f"line {self._line()}: elements nested deeper than {MAX_DEPTH} levels"
            )
        ns, local = _split(tag)
        element = XmlElement(ns, local, dict(attrib), self._line())
        if self.stack:
            self.stack[-1].children.append(element)
        else:
            self.root = element
        self.stack.append(element)

    def end(self, tag: str) -> None:
        self.stack.pop()

    def data(self, text: str) -> None:
        if self.stack:
            self.stack[-1].text += text

    def close(self) -> XmlElement | None:
        return self.root

    def _line(self) -> int:
        assert self.parser is not None
        return int(self.parser.parser.CurrentLineNumber)


def parse_xml(text: str | bytes) -> XmlElement:
    """Parse ``text`` safely into an ``XmlElement`` tree; raises ``InvalidDefinition``."""
    if not isinstance(text, str | bytes):
        raise InvalidDefinition("BPMN XML must be given as text or bytes")
    size = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else len(text)
    if size > MAX_BYTES:
        raise InvalidDefinition(f"the BPMN file is {size} bytes; at most {MAX_BYTES} are accepted")
    builder = _Builder()
    parser = DefusedXMLParser(
        target=builder, forbid_dtd=True, forbid_entities=True, forbid_external=True
    )
    builder.parser = parser
    try:
        parser.feed(text)
        root = parser.close()
    except (ExpatError, ParseError) as exc:
        line, column = _position(exc)
        raise InvalidDefinition(
            f"not well-formed XML at line {line}, column {column + 1}: {_expat_message(exc)}"
        ) from None
    except DefusedXmlException as exc:
        raise InvalidDefinition(
            f"line {_safe_line(parser)}: refused: {_defused(exc)}; "
            f"BPMN files may not declare a DTD or entities"
        ) from None
    except (UnicodeError, ValueError, LookupError) as exc:
        raise InvalidDefinition(f"cannot read the XML: {exc}") from None
    if not isinstance(root, XmlElement):
        raise InvalidDefinition("the XML has no root element")
    return root


def _position(exc: ExpatError | ParseError) -> tuple[int, int]:
    if isinstance(exc, ParseError):
        line, column = exc.position
        return int(line), int(column)
    return int(exc.lineno), int(exc.offset)


def _expat_message(exc: ExpatError | ParseError) -> str:
    return str(exc).split(":", 1)[0]


def _defused(exc: DefusedXmlException) -> str:
    return {
        "DTDForbidden": "a DTD (<!DOCTYPE ...>)",
        "EntitiesForbidden": "an entity declaration",
        "ExternalReferenceForbidden": "an external reference",
    }.get(type(exc).__name__, type(exc).__name__)


def _safe_line(parser: DefusedXMLParser) -> int:
    try:
        return int(parser.parser.CurrentLineNumber)
    except AttributeError:
        return 0
