"""Reading a DMN file (DMN 1.1 to 1.5, as Camunda Modeler saves it) into a ``DmnFile``.

The XML goes through the hardened reader (no DTD, no entities, bounded size and depth). Every
problem found in the decisions is collected and the file is refused once, listing them all
with the line and element of each. Diagram elements (``dmndi``, ``biodi``) and other
namespaces are ignored; ``inputData`` and knowledge sources are documentation only."""

from __future__ import annotations

from dataclasses import dataclass

from bpm.definitions.bpmn_xml import XmlElement, parse_xml
from bpm.dmn.feel_lex import FeelSyntaxError
from bpm.dmn.limits import MAX_DECISIONS
from bpm.dmn.model import Decision, DecisionTable, DmnFile, LiteralExpression
from bpm.dmn.reader_cells import Problems, compile_expression, describe, language, text_of
from bpm.dmn.reader_table import CAMUNDA_NS, TableReader
from bpm.dmn.typeref import normalise
from bpm.errors import InvalidDefinition

#: The DMN model namespaces, by the DMN version they belong to.
DMN_NAMESPACES = {
    "http://www.omg.org/spec/DMN/20151101/dmn.xsd": "1.1",
    "http://www.omg.org/spec/DMN/20151101/dmn11.xsd": "1.1",
    "http://www.omg.org/spec/DMN/20180521/MODEL/": "1.2",
    "https://www.omg.org/spec/DMN/20191111/MODEL/": "1.3",
    "https://www.omg.org/spec/DMN/20191111/DMN13.xsd": "1.3",
    "https://www.omg.org/spec/DMN/20211108/MODEL/": "1.4",
    "https://www.omg.org/spec/DMN/20230324/MODEL/": "1.5",
}
#: Decision logic Camunda 7 does not evaluate either.
_OTHER_LOGIC = frozenset(
    {
        "context",
        "invocation",
        "list",
        "relation",
        "functionDefinition",
        "conditional",
        "filter",
        "for",
        "every",
        "some",
    }
)
_LOGIC_TAGS = frozenset({"decisionTable", "literalExpression"}) | _OTHER_LOGIC


@dataclass
class _Draft:
    element: XmlElement
    key: str
    name: str
    logic: DecisionTable | LiteralExpression
    requires: list[tuple[str, XmlElement]]


def parse_dmn(xml: str | bytes) -> DmnFile:
    """The decisions of a DMN file; raises ``InvalidDefinition`` listing every problem."""
    root = parse_xml(xml, what="DMN")
    if root.tag != "definitions" or root.ns not in DMN_NAMESPACES:
        shown = f"{{{root.ns}}}{root.tag}" if root.ns else root.tag
        raise InvalidDefinition(
            f"line {root.line}: not a DMN file: the root element is <{shown}>, not "
            f"<definitions> in a DMN 1.1 to 1.5 namespace"
        )
    ns = root.ns
    problems = Problems()
    default = language(root, None)
    tables = TableReader(ns, default, problems)
    elements = [c for c in root.children if c.ns == ns and c.tag == "decision"]
    if len(elements) > MAX_DECISIONS:
        raise InvalidDefinition(
            f"line {root.line}: the DMN file has {len(elements)} decisions; at most "
            f"{MAX_DECISIONS} are accepted"
        )
    drafts: dict[str, _Draft] = {}
    without_logic: set[str] = set()
    for index, element in enumerate(elements, 1):
        draft = _decision(element, index, ns, default, tables, problems)
        if draft is None:
            if not any(c.ns == ns and c.tag in _LOGIC_TAGS for c in element.children):
                without_logic.add(element.attrib.get("id", ""))
            continue
        if draft.key in drafts:
            problems.add(element, describe(element, None), "a second decision with this id")
            continue
        drafts[draft.key] = draft
    all_ids = {e.attrib.get("id", "").strip() for e in elements}
    decisions = _link(drafts, without_logic, all_ids, problems)
    problems.raise_if_any()
    if not decisions:
        raise InvalidDefinition(
            f"line {root.line}: the DMN file has no decision with a decision table or a "
            f"literal expression"
        )
    return DmnFile(
        root.attrib.get("id", ""),
        root.attrib.get("name", ""),
        root.attrib.get("namespace", ""),
        DMN_NAMESPACES[ns],
        decisions,
    )


def _decision(
    element: XmlElement,
    index: int,
    ns: str,
    default: str | None,
    tables: TableReader,
    problems: Problems,
) -> _Draft | None:
    key = element.attrib.get("id", "").strip()
    where = describe(element, None, index)
    if not key:
        problems.add(element, where, "a decision needs an id (it is the decision's key)")
    requires = _requirements(element, ns, key, problems)
    logic_elements = [c for c in element.children if c.ns == ns and c.tag in _LOGIC_TAGS]
    if not logic_elements:
        return None  # a decision without logic has nothing to evaluate: it is left out
    logic_element = logic_elements[0]
    logic: DecisionTable | LiteralExpression | None
    if logic_element.tag == "decisionTable":
        logic = tables.read(logic_element, key)
    elif logic_element.tag == "literalExpression":
        logic = _literal(element, logic_element, ns, key, default, problems)
    else:
        problems.add(
            logic_element,
            describe(logic_element, key),
            f"decision logic <{logic_element.tag}> is not supported yet; only decision tables "
            f"and literal expressions are",
        )
        logic = None
    if logic is None or not key:
        return None
    return _Draft(element, key, element.attrib.get("name", ""), logic, requires)


def _requirements(
    element: XmlElement, ns: str, key: str, problems: Problems
) -> list[tuple[str, XmlElement]]:
    found: list[tuple[str, XmlElement]] = []
    for requirement in element.children:
        if requirement.ns != ns or requirement.tag != "informationRequirement":
            continue
        for required in requirement.children:
            if required.ns != ns or required.tag != "requiredDecision":
                continue  # requiredInput names an inputData: a variable the caller passes
            href = required.attrib.get("href", "").strip()
            if not href.startswith("#") or len(href) < 2:
                problems.add(
                    required,
                    describe(required, key),
                    f"href {href!r} does not name a decision of this file ('#decisionId')",
                )
                continue
            found.append((href[1:], required))
    return found


def _literal(
    decision: XmlElement,
    element: XmlElement,
    ns: str,
    key: str,
    default: str | None,
    problems: Problems,
) -> LiteralExpression | None:
    where = describe(element, key)
    variable = decision.find(ns, "variable")
    name = variable.attrib.get("name", "").strip() if variable is not None else ""
    if not name:
        problems.add(
            decision,
            describe(decision, None),
            "a decision with a literal expression needs a <variable name=...> for its result",
        )
        return None
    source = text_of(element, ns)
    if not source.strip():
        problems.add(element, where, "the literal expression is empty")
        return None
    try:
        expr = compile_expression(source, language(element, default))
    except FeelSyntaxError as exc:
        problems.add(element, where, f"{exc} (in {source.strip()[:80]!r})")
        return None
    assert variable is not None
    type_ref = normalise(variable.attrib.get("typeRef"))
    return LiteralExpression(element.attrib.get("id", key), name, source.strip(), expr, type_ref)


def _link(
    drafts: dict[str, _Draft],
    without_logic: set[str],
    all_ids: set[str],
    problems: Problems,
) -> dict[str, Decision]:
    """The decisions with their required decisions resolved, refusing unknown ones and
    cycles; built required-first, so each ``Decision`` holds finished ones."""
    valid: dict[str, list[str]] = {}
    for key, draft in drafts.items():
        needs: list[str] = []
        for needed, element in draft.requires:
            if needed in drafts:
                needs.append(needed)
            elif needed in without_logic:
                problems.add(
                    element,
                    describe(element, key),
                    f"the required decision {needed!r} has no decision logic",
                )
            elif needed not in all_ids:
                problems.add(
                    element, describe(element, key), f"no decision {needed!r} in this file"
                )
        valid[key] = needs
    order = _topological(valid, drafts, problems)
    built: dict[str, Decision] = {}
    for key in order:
        draft = drafts[key]
        built[key] = Decision(
            key,
            draft.name,
            draft.element.line,
            draft.logic,
            tuple(built[n] for n in dict.fromkeys(valid[key])),
            draft.element.attrib.get(f"{{{CAMUNDA_NS}}}versionTag"),
            draft.element.attrib.get(f"{{{CAMUNDA_NS}}}historyTimeToLive"),
        )
    return {key: built[key] for key in drafts if key in built}


def _topological(
    needs: dict[str, list[str]], drafts: dict[str, _Draft], problems: Problems
) -> list[str]:
    """Keys with every requirement before its dependant; a cycle is a problem."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in needs:
        if state.get(start):
            continue
        path: list[str] = [start]
        stack: list[tuple[str, int]] = [(start, 0)]
        state[start] = 1
        while stack:
            key, index = stack.pop()
            if index < len(needs[key]):
                stack.append((key, index + 1))
                child = needs[key][index]
                if state.get(child) == 1:
                    cycle = " -> ".join([*path[path.index(child) :], child])
                    problems.add(
                        drafts[key].element,
                        describe(drafts[key].element, None),
                        f"the required decisions form a loop: {cycle}",
                    )
                    return []
                if not state.get(child):
                    state[child] = 1
                    path.append(child)
                    stack.append((child, 0))
            else:
                state[key] = 2
                path.pop()
                order.append(key)
    return order
