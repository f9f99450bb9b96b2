"""``bpm deploy``: output shapes, idempotent redeploys, and one-line errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

from bpm.demo import ORDER_FULFILMENT
from tests.cli.conftest import Bpm

MINIMAL = {
    "key": "tiny",
    "nodes": [{"id": "s", "type": "startEvent"}, {"id": "e", "type": "endEvent"}],
    "flows": [{"id": "f", "source": "s", "target": "e"}],
}


def test_deploy_json__has_id_key_version(bpm: Bpm) -> None:
    doc = bpm.json("deploy", str(ORDER_FULFILMENT))
    assert isinstance(doc, dict)
    assert {"id", "key", "version"} <= set(doc)
    assert doc["key"] == "order_fulfilment"
    assert doc["version"] == 1
    assert len(str(doc["id"])) == 36


def test_deploy__same_document_twice_keeps_the_version(bpm: Bpm) -> None:
    first = bpm.json("deploy", str(ORDER_FULFILMENT))
    again = bpm.json("deploy", str(ORDER_FULFILMENT))
    assert isinstance(first, dict) and isinstance(again, dict)
    assert again["id"] == first["id"] and again["version"] == 1
    assert again["created"] is False


def test_deploy__changed_document_is_a_new_version(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(MINIMAL))
    bpm.ok("deploy", str(path))
    path.write_text(json.dumps({**MINIMAL, "name": "Tiny, renamed"}))
    doc = bpm.json("deploy", str(path))
    assert isinstance(doc, dict) and doc["version"] == 2


def test_deploy__human_output_names_key_version_and_id(bpm: Bpm) -> None:
    out = bpm.ok("deploy", str(ORDER_FULFILMENT)).stdout
    assert "order_fulfilment" in out and "version 1" in out and "id " in out


def test_deploy__bad_json_file_names_the_line(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"key": "x",\n  "nodes": [}\n')
    line = bpm.error("deploy", str(path))
    assert "broken.json" in line and "line 2" in line


def test_deploy__missing_file(bpm: Bpm) -> None:
    assert "no such file" in bpm.error("deploy", "nowhere.json")


def test_deploy__invalid_definition_names_the_element(bpm: Bpm, tmp_path: Path) -> None:
    doc = json.loads(json.dumps(MINIMAL))
    doc["flows"].append({"id": "dangling", "source": "s", "target": "ghost"})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    line = bpm.error("deploy", str(path))
    assert "'dangling'" in line and "ghost" in line


def test_deploy__unknown_node_type_names_the_node(bpm: Bpm, tmp_path: Path) -> None:
    doc = json.loads(json.dumps(MINIMAL))
    doc["nodes"].append({"id": "mystery", "type": "bogusTask"})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    line = bpm.error("deploy", str(path))
    assert "'mystery'" in line and "bogusTask" in line


def test_deploy__invalid_definition_changes_nothing(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**MINIMAL, "typo": 1}))
    assert "typo" in bpm.error("deploy", str(path))
    assert "no process definition 'tiny'" in bpm.error("start", "tiny")


def test_deploy__bpmn_that_is_not_bpmn_is_refused(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "p.bpmn"
    path.write_text("<definitions/>")
    assert "BPMN" in bpm.error("deploy", str(path))
