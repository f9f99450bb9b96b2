"""``bpm deploy FILE.bpmn``: every process of the file is deployed and printed."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Bpm

TWO_PROCESSES = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="first" name="First" isExecutable="true">
    <startEvent id="s"/><endEvent id="e"/>
    <sequenceFlow id="f" sourceRef="s" targetRef="e"/>
  </process>
  <process id="second" isExecutable="false">
    <startEvent id="s2"/><manualTask id="m"/><endEvent id="e2"/>
    <sequenceFlow sourceRef="s2" targetRef="m"/><sequenceFlow sourceRef="m" targetRef="e2"/>
  </process>
</definitions>
"""


def test_deploy_bpmn__prints_every_process(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "two.bpmn"
    path.write_text(TWO_PROCESSES)
    out = bpm.ok("deploy", str(path)).stdout
    assert "deployed first version 1" in out and "deployed second version 1" in out
    again = bpm.json("deploy", str(path))
    assert isinstance(again, list)
    assert [(d["key"], d["version"], d["created"]) for d in again] == [
        ("first", 1, False),
        ("second", 1, False),
    ]


def test_deploy_bpmn__rejection_names_file_and_line(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "bad.bpmn"
    path.write_text(TWO_PROCESSES.replace('<manualTask id="m"/>', '<inclusiveGateway id="m"/>'))
    line = bpm.error("deploy", str(path))
    assert "bad.bpmn" in line and "line 8: inclusiveGateway 'm' is not supported yet" in line


def test_deploy_bpmn__malformed_xml(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "broken.bpmn"
    path.write_text("<definitions>\n<process>\n</definitions>")
    assert "not well-formed XML at line 3" in bpm.error("deploy", str(path))
