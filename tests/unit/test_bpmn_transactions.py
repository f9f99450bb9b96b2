"""BPMN transactions: ``transaction``, the cancel end event and the cancel boundary read into
the definition format, and each misuse refused naming its line and element."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from tests.helpers.modeler import chain, modeler_file


def _file(
    *,
    method: str = "",
    cancel_end: bool = True,
    boundary: str = '<bpmn:boundaryEvent id="B" attachedToRef="T">'
    "<bpmn:cancelEventDefinition /></bpmn:boundaryEvent>",
    element: str = "transaction",
) -> str:
    end = (
        '<bpmn:endEvent id="TE"><bpmn:cancelEventDefinition id="c" /></bpmn:endEvent>'
        if cancel_end
        else '<bpmn:endEvent id="TE" />'
    )
    body = (
        '<bpmn:startEvent id="S" />'
        f'<bpmn:{element} id="T"{method}><bpmn:startEvent id="TS" />{end}'
        + chain("TS", "TE")
        + f"</bpmn:{element}>"
        + boundary
        + '<bpmn:endEvent id="E" />'
        + chain("S", "T", "E")
        + ('<bpmn:endEvent id="E2" />' + chain("B", "E2") if boundary else "")
    )
    return modeler_file("p", body)


def _nodes(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    todo = list(doc["nodes"])
    while todo:
        node = todo.pop()
        out[node["id"]] = node
        todo.extend(node.get("nodes", []))
    return out


@pytest.mark.parametrize("method", ["", ' method="##Compensate"'])
def test_a_transaction_with_a_cancel_end_and_boundary_is_read(method: str) -> None:
    (doc,) = compile_bpmn(_file(method=method))
    nodes = _nodes(doc)
    assert nodes["T"]["type"] == "subProcess" and nodes["T"]["transaction"] is True
    assert nodes["TE"] == {"id": "TE", "type": "endEvent", "cancel": True}
    assert nodes["B"] == {"id": "B", "type": "boundaryEvent", "attachedTo": "T", "cancel": True}


def test_another_method_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match=r"line \d+: .*T.* method='##Image'"):
        compile_bpmn(_file(method=' method="##Image"'))


def test_a_non_interrupting_cancel_boundary_is_refused() -> None:
    boundary = (
        '<bpmn:boundaryEvent id="B" attachedToRef="T" cancelActivity="false">'
        "<bpmn:cancelEventDefinition /></bpmn:boundaryEvent>"
    )
    with pytest.raises(InvalidDefinition, match="cancel boundaries always interrupt"):
        compile_bpmn(_file(boundary=boundary))


def test_a_cancel_end_outside_a_transaction_is_refused_naming_it() -> None:
    with pytest.raises(InvalidDefinition, match=r"line \d+: .*'TE'.* only allowed inside a tra"):
        compile_bpmn(_file(element="subProcess", boundary=""))


def test_a_transaction_with_a_cancel_end_but_no_cancel_boundary_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match="'T' has a cancel end event but no cancel bou"):
        compile_bpmn(_file(boundary=""))


def test_a_cancel_boundary_on_a_subprocess_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match="can only be attached to a transaction"):
        compile_bpmn(_file(element="subProcess", cancel_end=False))


def test_a_transaction_without_a_cancel_end_needs_no_boundary() -> None:
    (doc,) = compile_bpmn(_file(cancel_end=False, boundary=""))
    assert _nodes(doc)["T"]["transaction"] is True
