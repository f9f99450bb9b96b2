"""``bpm deploy FILE.bpmn``: every process of the file is deployed and printed."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Bpm
from tests.unit.test_bpmn_every_problem import SEVERAL

TWO_PROCESSES = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="first" name="First" isExecutable="true">
    <startEvent id="s"/><endEvent id="e"/>
    <sequenceFlow id="f" sourceRef="s" targetRef="e"/>
  </process>
  <process id="second" isExecutable="true">
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
    path.write_text(TWO_PROCESSES.replace('<manualTask id="m"/>', '<complexGateway id="m"/>'))
    line = bpm.error("deploy", str(path))
    assert "bad.bpmn" in line and "line 8: complexGateway 'm' is not supported yet" in line


def test_deploy_bpmn__malformed_xml(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "broken.bpmn"
    path.write_text("<definitions>\n<process>\n</definitions>")
    assert "broken.bpmn: line 3: not well-formed XML" in bpm.error("deploy", str(path))


MODELER_STYLE = TWO_PROCESSES.replace(
    '<manualTask id="m"/>',
    '<complexGateway id="m"/><manualTask id="m2"><c:note xmlns:c="http://camunda.org/schema/1.0/bpmn"/></manualTask>',
).replace('<endEvent id="e"/>', '<endEvent id="e"><signalEventDefinition/></endEvent>')


def test_deploy_check__lists_every_problem_and_deploys_nothing(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "three.bpmn"
    path.write_text(MODELER_STYLE)
    result = bpm("deploy", "--check", str(path))
    assert result.exit_code != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 3, result.stderr
    assert all(line.startswith(f"error: {path}: line ") for line in lines)
    assert "endEvent 'e' has a signalEventDefinition without signalRef" in lines[0]
    assert "complexGateway 'm' is not supported yet" in lines[1]
    assert "line 8: camunda:note in manualTask 'm2' is not supported yet" in lines[2]
    assert "first" in bpm.error("start", "first")  # nothing was deployed


def test_deploy_check__a_good_file_is_named_and_not_deployed(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "two.bpmn"
    path.write_text(TWO_PROCESSES)
    out = bpm.ok("deploy", "--check", str(path)).stdout
    assert "ok, 2 process(es): first, second; nothing deployed" in out
    assert bpm.json("deploy", "--check", str(path)) == {
        "file": str(path),
        "ok": True,
        "processes": ["first", "second"],
        "ignored": [],
    }
    assert "first" in bpm.error("start", "first")  # nothing was deployed


def test_deploy_check__lists_importer_and_structural_problems_of_every_process(
    bpm: Bpm, tmp_path: Path
) -> None:
    path = tmp_path / "several.bpmn"
    path.write_text(SEVERAL)
    result = bpm("deploy", "--check", str(path))
    assert result.exit_code != 0
    lines = result.stderr.splitlines()
    assert [line.split(": ")[2] for line in lines] == [
        "line 5",
        "line 7",
        "line 13",
        "line 14",
        "line 21",
        "line 22",
    ], result.stderr
    assert "complexGateway 'A_g'" in lines[0] and "'A_lost': unreachable" in lines[1]
    assert "second startEvent" in lines[2] and "'B_g' (exclusiveGateway)" in lines[3]
    assert "camunda:nonsense" in lines[4] and "without signalRef" in lines[5]


OTHER_VENDORS = TWO_PROCESSES.replace(
    '<manualTask id="m"/>',
    '<manualTask id="m" xmlns:signavio="http://www.signavio.com" '
    'xmlns:flowable="http://flowable.org/bpmn" flowable:assignee="ann">'
    '<extensionElements><signavio:signavioMetaData metaKey="k" metaValue="v"/>'
    "</extensionElements></manualTask>",
)


def test_deploy_check__lists_what_it_ignores(bpm: Bpm, tmp_path: Path) -> None:
    path = tmp_path / "vendors.bpmn"
    path.write_text(OTHER_VENDORS)
    out = bpm.ok("deploy", "--check", str(path)).stdout.splitlines()
    assert out[0].startswith("ignored: line 8: manualTask 'm' has the attribute flowable:assignee")
    assert out[1].startswith("ignored: line 8: signavio:signavioMetaData in manualTask 'm'")
    assert out[2].endswith("ok, 2 process(es): first, second; nothing deployed")
    checked = bpm.json("deploy", "--check", str(path))
    assert isinstance(checked, dict)
    assert [note.split(": ")[0] for note in checked["ignored"]] == ["line 8", "line 8"]
