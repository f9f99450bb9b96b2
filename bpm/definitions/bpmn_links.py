"""Link events: a throw link event and the catch link event of the same name in the same scope
are two ends of one sequence flow drawn in two places (an off-page connector). The importer
joins them with that flow, so the engine sees a path like any other: both events pass the
token through, and history shows it going from the throw to the catch.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.bpmn_events import LINK
from bpm.errors import InvalidDefinition

Mapped = dict[str, Any]


def join_links(nodes: list[Mapped], flows: list[Mapped], lines: dict[str, int]) -> None:
    """Replace each link event's marker with the flow from its throw to its catch; a throw
    whose name no catch of this scope has, a name two catches share, or a link event with a
    flow on the wrong side is refused with the line of the event."""
    throws: list[tuple[str, str]] = []
    catches: dict[str, str] = {}
    problems: list[str] = []
    for node in nodes:
        if LINK not in node:
            continue
        side, name = node.pop(LINK)
        if side == "throw":
            throws.append((node["id"], name))
        elif name in catches:
            problems.append(
                f"line {lines.get(node['id'], 0)}: link catch event {node['id']!r} has the "
                f"name {name!r} of link catch event {catches[name]!r}; a name marks one target"
            )
        else:
            catches[name] = node["id"]
    drawn = list(flows)
    for flow in drawn:
        if flow["target"] in catches.values():
            problems.append(
                f"line {lines.get(flow['id'], 0)}: sequence flow {flow['id']!r} enters link "
                f"catch event {flow['target']!r}; only its link leads there"
            )
        if any(flow["source"] == throw for throw, _ in throws):
            problems.append(
                f"line {lines.get(flow['id'], 0)}: sequence flow {flow['id']!r} leaves link "
                f"throw event {flow['source']!r}; the token goes on at its link's catch event"
            )
    taken = {f["id"] for f in flows} | {n["id"] for n in nodes}
    for throw, name in throws:
        catch = catches.get(name)
        if catch is None:
            problems.append(
                f"line {lines.get(throw, 0)}: link throw event {throw!r} names link {name!r}, "
                "which no link catch event of the same scope has"
            )
            continue
        flow_id = f"{throw}__link"
        while flow_id in taken:
            flow_id += "_"
        taken.add(flow_id)
        flows.append({"id": flow_id, "source": throw, "target": catch, "name": name})
    if problems:
        raise InvalidDefinition("\n".join(problems), throws[0][0] if throws else None)
