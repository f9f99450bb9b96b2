"""Small DMN files written the way Camunda Modeler writes them (ids, ``biodi`` widths, a
``dmndi`` diagram for DMN 1.3 and later, ``biodi`` bounds for DMN 1.1), for the DMN tests."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "unit" / "dmn"

NAMESPACES = {
    "1.1": "http://www.omg.org/spec/DMN/20151101/dmn.xsd",
    "1.2": "http://www.omg.org/spec/DMN/20180521/MODEL/",
    "1.3": "https://www.omg.org/spec/DMN/20191111/MODEL/",
    "1.4": "https://www.omg.org/spec/DMN/20211108/MODEL/",
    "1.5": "https://www.omg.org/spec/DMN/20230324/MODEL/",
}
_DMNDI = {
    "1.2": "http://www.omg.org/spec/DMN/20180521/DMNDI/",
    "1.3": "https://www.omg.org/spec/DMN/20191111/DMNDI/",
    "1.4": "https://www.omg.org/spec/DMN/20211108/DMNDI/",
    "1.5": "https://www.omg.org/spec/DMN/20230324/DMNDI/",
}

#: An input column: (label, input expression, typeRef or None).
Column = tuple[str, str, str | None]
#: An output column: (name, typeRef or None); or (name, typeRef, outputValues text).
OutputColumn = tuple[str, str | None] | tuple[str, str | None, str]


def model(path: str) -> str:
    """A model file of tests/unit/dmn."""
    return (MODELS / path).read_text()


def definitions(body: str, version: str = "1.3", extra: str = "") -> str:
    ns = NAMESPACES[version]
    dmndi = _DMNDI.get(version)
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<definitions xmlns="{ns}"'
        + (
            f' xmlns:dmndi="{dmndi}" xmlns:dc="http://www.omg.org/spec/DMN/20180521/DC/"'
            if dmndi
            else ""
        )
        + ' xmlns:camunda="http://camunda.org/schema/1.0/dmn"'
        + (
            ' xmlns:biodi="http://bpmn.io/schema/dmn/biodi/2.0"'
            if dmndi
            else ' xmlns:biodi="http://bpmn.io/schema/dmn/biodi/1.0"'
        )
        + f' id="Definitions_1" name="DRD" namespace="http://camunda.org/schema/1.0/dmn"'
        f' exporter="Camunda Modeler" exporterVersion="5.17.0"{extra}>\n'
    )
    return head + body + "</definitions>\n"


def decision_table(
    inputs: Sequence[Column],
    outputs: Sequence[OutputColumn],
    rules: Sequence[tuple[Sequence[str], Sequence[str]]],
    *,
    hit_policy: str | None = None,
    aggregation: str | None = None,
    key: str = "decision",
    version: str = "1.3",
    requires: Sequence[str] = (),
) -> str:
    """One decision with a decision table; entries are FEEL text (escaped here)."""
    return definitions(
        table_decision(
            inputs,
            outputs,
            rules,
            hit_policy=hit_policy,
            aggregation=aggregation,
            key=key,
            version=version,
            requires=requires,
        ),
        version,
    )


def table_decision(
    inputs: Sequence[Column],
    outputs: Sequence[OutputColumn],
    rules: Sequence[tuple[Sequence[str], Sequence[str]]],
    *,
    hit_policy: str | None = None,
    aggregation: str | None = None,
    key: str = "decision",
    version: str = "1.3",
    requires: Sequence[str] = (),
) -> str:
    """The ``<decision>`` element alone, to put several in one file."""
    policy = f' hitPolicy="{hit_policy}"' if hit_policy else ""
    policy += f' aggregation="{aggregation}"' if aggregation else ""
    lines = [f'  <decision id="{key}" name="{key.title()}">']
    if version == "1.1":
        lines.append(
            '    <extensionElements>\n      <biodi:bounds x="150" y="80" width="180" '
            'height="80" />\n    </extensionElements>'
        )
    for index, needed in enumerate(requires, 1):
        lines.append(
            f'    <informationRequirement id="InformationRequirement_{key}_{index}">\n'
            f'      <requiredDecision href="#{needed}" />\n    </informationRequirement>'
        )
    lines.append(f'    <decisionTable id="DecisionTable_{key}"{policy}>')
    for index, (label, expression, type_ref) in enumerate(inputs, 1):
        typed = f' typeRef="{type_ref}"' if type_ref else ""
        lines.append(
            f'      <input id="Input_{index}" label="{escape(label)}" biodi:width="192">\n'
            f'        <inputExpression id="InputExpression_{index}"{typed}>\n'
            f"          <text>{escape(expression, quote=False)}</text>\n"
            f"        </inputExpression>\n      </input>"
        )
    for index, column in enumerate(outputs, 1):
        name, type_ref = column[0], column[1]
        typed = f' typeRef="{type_ref}"' if type_ref else ""
        named = f' name="{name}"' if name else ""
        values = ""
        if len(column) == 3:
            values = (
                f'\n        <outputValues id="UnaryTests_values_{index}">\n'
                f"          <text>{escape(column[2], quote=False)}</text>\n"
                f"        </outputValues>\n      "
            )
        lines.append(
            f'      <output id="Output_{index}" label="{name}"{named}{typed}>{values}</output>'
        )
    for row, (entries, results) in enumerate(rules, 1):
        lines.append(f'      <rule id="DecisionRule_{row}">')
        for position, text in enumerate(entries, 1):
            lines.append(
                f'        <inputEntry id="UnaryTests_{row}_{position}">\n'
                f"          <text>{escape(text, quote=False)}</text>\n        </inputEntry>"
            )
        for position, text in enumerate(results, 1):
            lines.append(
                f'        <outputEntry id="LiteralExpression_{row}_{position}">\n'
                f"          <text>{escape(text, quote=False)}</text>\n        </outputEntry>"
            )
        lines.append("      </rule>")
    lines.append("    </decisionTable>\n  </decision>")
    if version != "1.1":
        lines.append(
            "  <dmndi:DMNDI>\n"
            f'    <dmndi:DMNDiagram id="DMNDiagram_{key}">\n'
            f'      <dmndi:DMNShape id="DMNShape_{key}" dmnElementRef="{key}">\n'
            '        <dc:Bounds height="80" width="180" x="160" y="100" />\n'
            "      </dmndi:DMNShape>\n    </dmndi:DMNDiagram>\n  </dmndi:DMNDI>"
        )
    return "\n".join(lines) + "\n"
