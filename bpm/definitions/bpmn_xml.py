"""Hardened XML reading for the BPMN and DMN importers: a small element tree that keeps lines.

The XML is parsed by ``defusedxml``'s expat parser with DTDs, entity declarations and external
references all forbidden, so an entity bomb or an external entity is refused before it expands
or fetches anything. Every problem (too large, too deep, malformed, forbidden construct) becomes
``InvalidDefinition`` in the one shape every refusal has: ``line N: ...``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from xml.etree.ElementTree import ParseError
from xml.parsers.expat import ExpatError
from xml.parsers.expat import errors as expat_errors

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from bpm.errors import InvalidDefinition

#: The largest file accepted, in bytes (UTF-8).
MAX_BYTES = 5 * 1024 * 1024
#: The deepest element nesting accepted (subprocesses inside subprocesses, extension elements).
MAX_DEPTH = 100
#: Prefixes modelers and other engines write without declaring them: read as these namespaces
#: (other engines tolerate such files), and named with these prefixes in refusals.
WELL_KNOWN = {
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
    "bpmn": "http://www.omg.org/spec/BPMN/20100524/MODEL",
    "bpmn2": "http://www.omg.org/spec/BPMN/20100524/MODEL",
    "bpmndi": "http://www.omg.org/spec/BPMN/20100524/DI",
    "dc": "http://www.omg.org/spec/DD/20100524/DC",
    "di": "http://www.omg.org/spec/DD/20100524/DI",
    "camunda": "http://camunda.org/schema/1.0/bpmn",
    "zeebe": "http://camunda.org/schema/zeebe/1.0",
    "activiti": "http://activiti.org/bpmn",
    "operaton": "http://operaton.org/schema/1.0/bpmn",
    "fox": "http://www.camunda.com/fox",
    "xsd": "http://www.w3.org/2001/XMLSchema",
}
_UNBOUND = expat_errors.codes[expat_errors.XML_ERROR_UNBOUND_PREFIX]
_USED_PREFIX = re.compile(rb"(?:<|\s)([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*(?=[\s=/>])")
_DECLARED_PREFIX = re.compile(rb"xmlns:([A-Za-z_][\w.-]*)\s*=")
_ROOT_TAG = re.compile(rb"<(?![?!])[^\s/>]+")


@dataclass
class XmlElement:
    """One element: namespace, local name, attributes (``{ns}name`` for prefixed ones)."""

    ns: str
    tag: str
    attrib: dict[str, str]
    line: int
    children: list[XmlElement] = field(default_factory=list)
    text: str = ""
    #: The enclosing element (None for the root), so a refusal can name where a child sits.
    parent: XmlElement | None = field(default=None, repr=False, compare=False)
    #: Root only: the prefix the document declared for each namespace.
    prefixes: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    #: Root only: what the import accepted without behaviour and says so, ``line N: <what>``
    #: each (another vendor's extensions, attributes Camunda 7 ignores where they are).
    ignored: list[str] = field(default_factory=list, repr=False, compare=False)

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
        self.prefixes: dict[str, str] = {}

    def start_ns(self, prefix: str, uri: str) -> None:
        self.prefixes.setdefault(uri, prefix)

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise InvalidDefinition(
                f"line {self._line()}: elements nested deeper than {MAX_DEPTH} levels"
            )
        ns, local = _split(tag)
        parent = self.stack[-1] if self.stack else None
        element = XmlElement(ns, local, dict(attrib), self._line(), parent=parent)
        if parent is not None:
            parent.children.append(element)
        else:
            self.root = element
        self.stack.append(element)

    def end(self, tag: str) -> None:
        self.stack.pop()

    def data(self, text: str) -> None:
        if self.stack:
            self.stack[-1].text += text

    def close(self) -> XmlElement | None:
        if self.root is not None:
            self.root.prefixes = self.prefixes
        return self.root

    def _line(self) -> int:
        assert self.parser is not None
        return int(self.parser.parser.CurrentLineNumber)


def parse_xml(text: str | bytes, what: str = "BPMN") -> XmlElement:
    """Parse ``text`` safely into an ``XmlElement`` tree; raises ``InvalidDefinition``.

    A prefix from ``WELL_KNOWN`` used without its declaration is read as declared; any other
    undeclared prefix is refused, naming the declaration to add.
    """
    if not isinstance(text, str | bytes):
        raise InvalidDefinition(f"line 1: {what} XML must be given as text or bytes")
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(data) > MAX_BYTES:
        raise InvalidDefinition(
            f"line 1: the {what} file is {len(data)} bytes; at most {MAX_BYTES} are accepted"
        )
    try:
        return _parse(text)
    except _Unbound as unbound:
        missing = _undeclared(data)
        known = {p: WELL_KNOWN[p] for p in missing if p in WELL_KNOWN}
        if known and isinstance(text, str):
            return _declared(text.encode("utf-8", "surrogatepass"), known, unbound)
        if known:
            return _declared(data, known, unbound)
        raise unbound.refusal(missing) from None


class _Unbound(Exception):
    def __init__(self, line: int, column: int) -> None:
        super().__init__(line, column)
        self.line, self.column = line, column

    def refusal(self, missing: list[str]) -> InvalidDefinition:
        named = ", ".join(repr(p) for p in missing) or "a prefix"
        declare = " ".join(f'xmlns:{p}="…"' for p in missing) or 'xmlns:PREFIX="…"'
        return InvalidDefinition(
            f"line {self.line}: the namespace prefix {named} (column {self.column + 1}) is "
            f"used without a declaration; declare it on the root element ({declare})"
        )


def _declared(data: bytes, known: dict[str, str], unbound: _Unbound) -> XmlElement:
    root = _ROOT_TAG.search(data)
    if root is None or data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise unbound.refusal(sorted(known))
    extra = b"".join(f' xmlns:{p}="{uri}"'.encode() for p, uri in sorted(known.items()))
    patched = data[: root.end()] + extra + data[root.end() :]
    try:
        return _parse(patched)
    except _Unbound as again:
        raise again.refusal(_undeclared(patched)) from None


def _undeclared(data: bytes) -> list[str]:
    used = {m.decode() for m in _USED_PREFIX.findall(data)}
    declared = {m.decode() for m in _DECLARED_PREFIX.findall(data)}
    return sorted(used - declared - {"xml", "xmlns"})


def _parse(text: str | bytes) -> XmlElement:
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
        if getattr(exc, "code", None) == _UNBOUND:
            raise _Unbound(line, column) from None
        raise InvalidDefinition(
            f"line {line}: not well-formed XML (column {column + 1}): {_expat_message(exc)}"
        ) from None
    except DefusedXmlException as exc:
        raise InvalidDefinition(
            f"line {_safe_line(parser)}: refused: {_defused(exc)}; "
            f"the file may not declare a DTD or entities (remove the <!DOCTYPE ...>)"
        ) from None
    except (UnicodeError, ValueError, LookupError) as exc:
        raise InvalidDefinition(f"line 1: cannot read the XML: {exc}") from None
    if not isinstance(root, XmlElement):
        raise InvalidDefinition("line 1: the XML has no root element")
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
        return max(int(parser.parser.CurrentLineNumber), 1)
    except AttributeError:
        return 1
