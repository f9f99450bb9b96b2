"""The multi-instance marker of ``bpm trace --diagram``: BPMN's three bars under the
activity's label, vertical when its iterations run in parallel, horizontal when in sequence.
Apart from ``diagram`` and ``diagram_svg`` so the marker is drawn the same in both."""

from __future__ import annotations

from bpm.definitions.model import Node

#: The marker as text (Mermaid labels): parallel, sequential.
PARALLEL_TEXT = "|||"
SEQUENTIAL_TEXT = "≡"


def marker_text(node: Node) -> str | None:
    mi = node.multi_instance
    if mi is None:
        return None
    return SEQUENTIAL_TEXT if mi.sequential else PARALLEL_TEXT


def marker_svg(node: Node, cx: float, bottom: float, colour: str) -> str:
    """Three bars centred on ``cx`` ending 4 px above ``bottom`` ("" when not multi-instance)."""
    mi = node.multi_instance
    if mi is None:
        return ""
    bars = []
    for n in (-1, 0, 1):
        if mi.sequential:
            x1, x2, y = cx - 6, cx + 6, bottom - 8 + n * 4
            bars.append((x1, y, x2, y))
        else:
            x, top = cx + n * 4, bottom - 16
            bars.append((x, top, x, top + 12))
    return "".join(
        f'<line class="mi" x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" '
        f'stroke="{colour}" stroke-width="2"/>'
        for x1, y1, x2, y2 in bars
    )
