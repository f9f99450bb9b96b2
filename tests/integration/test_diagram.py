"""``Engine.diagram`` and ``bpm.diagram``: the definition drawn with the path an instance took.

Every test runs a real instance, then checks the marks (status and counts per node, counts per
flow) and what the SVG and the Mermaid text say about them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm import diagram
from bpm.definitions import ProcessBuilder
from bpm.definitions.parse.document import compile_definition
from bpm.errors import NotFound
from bpm.handlers import HandlerContext
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import Calls, Harness, failing

Doc = dict[str, Any]


def marks_of(rt: Harness, doc: Doc, iid: UUID) -> diagram.Marks:
    return diagram.mark(
        compile_definition(doc), rt.engine.trace(iid), rt.engine.show(iid)["tokens"]
    )


def statuses(marks: diagram.Marks) -> dict[str, str]:
    return {node_id: m.status for node_id, m in marks.nodes.items()}


def svg_nodes(svg: str) -> dict[str, dict[str, str]]:
    """The SVG parsed as XML: per drawn node, its data attributes."""
    root = ET.fromstring(svg.encode("utf-8"))
    return {
        str(e.get("data-node")): dict(e.attrib)
        for e in root.iter()
        if e.get("data-node") is not None
    }


def mermaid_classes(text: str) -> dict[str, str]:
    """Per Mermaid node id (``n_`` + node id here), the class a ``class`` line gives it."""
    out: dict[str, str] = {}
    for members, name in re.findall(r"^\s*class (\S+) (\w+)$", text, re.MULTILINE):
        for member in members.split(","):
            out[member] = name
    return out


def everything() -> Doc:
    """A fork into a task (with an error boundary) and a subprocess, a join, then an
    exclusive gateway whose default branch is taken only for small totals."""
    pack = (
        ProcessBuilder("pack")
        .start("pack_start")
        .service_task("pick", handler="ok", name="Pick items")
        .end("pack_end")
        .sequence("pack_start", "pick", "pack_end")
    )
    return (
        ProcessBuilder("everything", name="Everything")
        .start()
        .parallel_gateway("split")
        .service_task("reserve", handler="ok")
        .error_boundary("no_stock", attached_to="reserve", error="EMPTY")
        .service_task("reorder", handler="ok")
        .end("gave_up")
        .sub_process("pack", pack, name="Pack the parcel")
        .parallel_gateway("join")
        .exclusive_gateway("route", default="f_standard")
        .service_task("express", handler="ok")
        .service_task("standard", handler="ok")
        .exclusive_gateway("shipped")
        .end("done")
        .sequence("start", "split", "reserve", "join")
        .sequence("split", "pack", "join")
        .sequence("join", "route")
        .flow("route", "express", condition="total > 100", flow_id="f_express")
        .flow("route", "standard", flow_id="f_standard")
        .sequence("express", "shipped")
        .sequence("standard", "shipped")
        .sequence("shipped", "done")
        .sequence("no_stock", "reorder", "gave_up")
        .build()
    )


def test_the_path_taken_is_marked_and_the_branch_not_taken_is_not(
    rt: Harness, calls: Calls
) -> None:
    calls.add("ok")
    doc = everything()
    iid = rt.run(doc, {"total": 150})
    marks = marks_of(rt, doc, iid)
    found = statuses(marks)
    for node_id in (
        "start",
        "split",
        "reserve",
        "pack",
        "pack_start",
        "pick",
        "pack_end",
        "join",
        "route",
        "express",
        "shipped",
        "done",
    ):
        assert found[node_id] == diagram.VISITED, node_id
    for node_id in ("standard", "no_stock", "reorder", "gave_up"):
        assert found[node_id] == diagram.NOT_VISITED, node_id
    assert marks.flows["f_express"] == 1 and marks.flows["f_standard"] == 0
    assert marks.flows["split__pack"] == 1 and marks.flows["pack_start__pick"] == 1
    assert marks.nodes["join"].entered == 2  # one arrival per branch
    assert marks.nodes["express"].entered == 1 and marks.nodes["express"].runs == 1
    assert marks.nodes["standard"].entered == 0

    mermaid = rt.engine.diagram(iid)
    classes = mermaid_classes(mermaid)
    assert classes["n_express"] == "visited" and classes["n_standard"] == "not_visited"
    assert "n_route ==>|1x| n_express" in mermaid and "n_route --> n_standard" in mermaid


def test_svg_is_xml_with_every_node_and_mermaid_names_every_node_with_its_class(
    rt: Harness, calls: Calls
) -> None:
    calls.add("ok")
    doc = everything()
    iid = rt.run(doc, {"total": 10})
    graph = compile_definition(doc)

    drawn = svg_nodes(rt.engine.diagram(iid, "svg"))
    assert set(drawn) == set(graph.nodes)
    assert drawn["standard"]["data-status"] == "visited"
    assert drawn["express"]["data-status"] == "not visited"
    assert drawn["join"]["data-entered"] == "2"
    root = ET.fromstring(rt.engine.diagram(iid, "svg").encode("utf-8"))
    flows = {e.get("data-flow"): e.get("data-count") for e in root.iter() if e.get("data-flow")}
    assert set(flows) == set(graph.flows)
    assert flows["f_standard"] == "1" and flows["f_express"] == "0"

    mermaid = rt.engine.diagram(iid, "mermaid")
    assert mermaid.splitlines()[3] == "flowchart LR"
    assert str(iid) in mermaid.splitlines()[1]  # the title names the instance
    for node_id in graph.nodes:
        assert re.search(rf"^\s*n_{node_id}\b", mermaid, re.MULTILINE), node_id
    assert 'subgraph n_pack ["Pack the parcel<br/>pack<br/>1x"]' in mermaid
    assert "n_reserve -.- n_no_stock" in mermaid  # a boundary event sits on its host
    classes = mermaid_classes(mermaid)
    assert set(classes) == {f"n_{n}" for n in graph.nodes}
    assert classes["n_express"] == "not_visited" and classes["n_pack"] == "visited"
    for name in ("visited", "active", "failed", "compensated", "not_visited"):
        assert f"classDef {name} " in mermaid


def test_a_node_passed_twice_in_a_loop_counts_two_and_its_retries_count_as_runs(
    rt: Harness, calls: Calls
) -> None:
    def work(ctx: HandlerContext) -> dict[str, Any]:
        n = int(ctx.variables.get("n", 0))
        if n == 0 and ctx.attempt == 1:
            raise RuntimeError("first try fails")
        return {"n": n + 1}

    calls.add("work", work)
    doc = (
        ProcessBuilder("loop")
        .start()
        .service_task("work", handler="work", retry={"max_attempts": 2, "backoff": "PT1S"})
        .exclusive_gateway("again", default="f_out")
        .end()
        .sequence("start", "work", "again")
        .flow("again", "work", condition="n < 2", flow_id="f_back")
        .flow("again", "end", flow_id="f_out")
        .build()
    )
    iid = rt.run(doc)
    assert rows.state(rt.engine.db, iid) == "COMPLETED"
    marks = marks_of(rt, doc, iid)
    assert (marks.nodes["work"].entered, marks.nodes["work"].runs) == (2, 3)
    assert marks.nodes["again"].entered == 2
    assert marks.flows["f_back"] == 1 and marks.flows["f_out"] == 1
    assert marks.flows["work__again"] == 2
    assert marks.nodes["work"].count_text() == "2x, 3 runs"

    assert svg_nodes(rt.engine.diagram(iid, "svg"))["work"]["data-entered"] == "2"
    mermaid = rt.engine.diagram(iid)
    assert "n_again ==>|1x| n_work" in mermaid and "n_work ==>|2x| n_again" in mermaid
    assert 'n_work("work<br/>2x, 3 runs")' in mermaid


def test_an_operator_retry_runs_the_failed_node_again_and_it_is_no_longer_failed(
    rt: Harness, calls: Calls
) -> None:
    calls.add("flaky", failing(1))
    doc = (
        ProcessBuilder("retried")
        .start()
        .service_task("work", handler="flaky")
        .end()
        .sequence("start", "work", "end")
        .build()
    )
    iid = rt.run(doc)
    assert statuses(marks_of(rt, doc, iid))["work"] == diagram.FAILED
    (failed_token,) = [t for t in rows.tokens_of(rt.engine.db, iid) if t.state == "FAILED"]
    rt.engine.retry(failed_token.id)
    rt.drain()
    marks = marks_of(rt, doc, iid)
    assert marks.nodes["work"].status == diagram.VISITED
    assert (marks.nodes["work"].entered, marks.nodes["work"].runs) == (1, 2)
    assert marks.nodes["end"].status == diagram.VISITED


def test_an_instance_waiting_at_a_user_task_shows_it_active(rt: Harness) -> None:
    doc = (
        ProcessBuilder("approval")
        .start()
        .user_task("approve", name="Approve the order")
        .end()
        .sequence("start", "approve", "end")
        .build()
    )
    iid = rt.run(doc)
    assert statuses(marks_of(rt, doc, iid)) == {
        "start": diagram.VISITED,
        "approve": diagram.ACTIVE,
        "end": diagram.NOT_VISITED,
    }
    drawn = svg_nodes(rt.engine.diagram(iid, "svg"))
    assert drawn["approve"]["data-status"] == "active"
    assert "node active" in drawn["approve"]["class"]
    assert mermaid_classes(rt.engine.diagram(iid))["n_approve"] == "active"


def test_a_fired_timer_boundary_is_visited_and_leaves_its_task_behind(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("remind")
    doc = (
        ProcessBuilder("reminder")
        .start()
        .user_task("approve")
        .timer_boundary("late", attached_to="approve", duration="PT1H")
        .service_task("remind", handler="remind")
        .end()
        .end("escalated")
        .sequence("start", "approve", "end")
        .sequence("late", "remind", "escalated")
        .build()
    )
    iid = rt.run(doc)
    clock.advance(timedelta(hours=2))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    marks = marks_of(rt, doc, iid)
    assert statuses(marks) == {
        "start": diagram.VISITED,
        "approve": diagram.VISITED,
        "late": diagram.VISITED,
        "remind": diagram.VISITED,
        "escalated": diagram.VISITED,
        "end": diagram.NOT_VISITED,
    }
    assert marks.flows["late__remind"] == 1 and marks.flows["approve__end"] == 0


def test_a_failed_instance_shows_the_failed_node_and_its_subprocess(
    rt: Harness, calls: Calls
) -> None:
    calls.add("boom", failing(1000))
    inner = (
        ProcessBuilder("inner")
        .start("in_start")
        .service_task("inner_work", handler="boom")
        .end("in_end")
        .sequence("in_start", "inner_work", "in_end")
    )
    doc = (
        ProcessBuilder("broken")
        .start()
        .sub_process("sub", inner)
        .end()
        .sequence("start", "sub", "end")
        .build()
    )
    iid = rt.run(doc)
    assert rows.state(rt.engine.db, iid) == "FAILED"
    assert statuses(marks_of(rt, doc, iid)) == {
        "start": diagram.VISITED,
        "sub": diagram.FAILED,
        "in_start": diagram.VISITED,
        "inner_work": diagram.FAILED,
        "in_end": diagram.NOT_VISITED,
        "end": diagram.NOT_VISITED,
    }
    drawn = svg_nodes(rt.engine.diagram(iid, "svg"))
    assert drawn["inner_work"]["data-status"] == "failed"
    classes = mermaid_classes(rt.engine.diagram(iid))
    assert classes["n_inner_work"] == "failed" and classes["n_end"] == "not_visited"


def test_a_saga_shows_the_compensated_nodes(rt: Harness, calls: Calls) -> None:
    for name in ("do_a", "do_b", "undo_a", "undo_b", "undo_c"):
        calls.add(name)
    calls.add("boom", failing(1000))
    b = ProcessBuilder("abc", saga="global").start()
    for step in ("a", "b", "c"):
        b._node(
            step,
            "serviceTask",
            handler="boom" if step == "c" else f"do_{step}",
            compensation={"handler": f"undo_{step}"},
        )
    doc = b.end().sequence("start", "a", "b", "c", "end").build()
    iid = rt.run(doc)
    assert rows.state(rt.engine.db, iid) == "TERMINATED"
    marks = marks_of(rt, doc, iid)
    assert statuses(marks) == {
        "start": diagram.VISITED,
        "a": diagram.COMPENSATED,
        "b": diagram.COMPENSATED,
        "c": diagram.FAILED,
        "end": diagram.NOT_VISITED,
    }
    # the compensation tokens at a and b are not counted as arrivals, nor their undo runs
    assert (marks.nodes["a"].entered, marks.nodes["a"].runs) == (1, 1)
    assert marks.count(diagram.COMPENSATED) == 2
    drawn = svg_nodes(rt.engine.diagram(iid, "svg"))
    assert {n: drawn[n]["data-status"] for n in ("a", "b", "c")} == {
        "a": "compensated",
        "b": "compensated",
        "c": "failed",
    }
    classes = mermaid_classes(rt.engine.diagram(iid))
    assert classes["n_a"] == classes["n_b"] == "compensated"


def test_diagram_refuses_an_unknown_format_and_an_unknown_instance(
    rt: Harness, calls: Calls
) -> None:
    calls.add("ok")
    doc = (
        ProcessBuilder("tiny")
        .start()
        .service_task("work", handler="ok")
        .end()
        .sequence("start", "work", "end")
        .build()
    )
    iid = rt.run(doc)
    with pytest.raises(ValueError, match="unknown diagram format 'png'"):
        rt.engine.diagram(iid, "png")
    with pytest.raises(NotFound, match="does not exist"):
        rt.engine.diagram("3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77")


def test_a_compensation_waiting_for_a_person_shows_where_the_saga_stands(
    rt: Harness, calls: Calls
) -> None:
    calls.add("do_a")
    calls.add("boom", failing(1000))
    b = ProcessBuilder("by_hand", saga="global").start()
    b._node("a", "serviceTask", handler="do_a", compensation={"node": "undo_a"})
    b._node("undo_a", "userTask", candidate_groups=["ops"])
    b._node("ship", "serviceTask", handler="boom")
    doc = b.end().sequence("start", "a", "ship", "end").build()
    iid = rt.run(doc)
    marks = marks_of(rt, doc, iid)
    assert statuses(marks) == {
        "start": diagram.VISITED,
        "a": diagram.ACTIVE,
        "undo_a": diagram.ACTIVE,
        "ship": diagram.FAILED,
        "end": diagram.NOT_VISITED,
    }
    assert "n_a -.->|undo| n_undo_a" in rt.engine.diagram(iid)

    (task,) = rt.engine.user_tasks(group="ops")
    rt.engine.complete_user_task(task["id"], {})
    rt.drain()
    assert rows.state(rt.engine.db, iid) == "TERMINATED"
    marks = marks_of(rt, doc, iid)
    assert marks.nodes["a"].status == marks.nodes["undo_a"].status == diagram.COMPENSATED
    assert (marks.nodes["a"].entered, marks.nodes["undo_a"].entered) == (1, 1)
    assert svg_nodes(rt.engine.diagram(iid, "svg"))["undo_a"]["data-status"] == "compensated"


def test_a_cancelled_transaction_is_drawn_with_a_double_border_and_its_path(
    rt: Harness, calls: Calls
) -> None:
    for name in ("do_a", "undo_a", "after"):
        calls.add(name)
    body = ProcessBuilder("body").start("t_start")
    body._node("a", "serviceTask", handler="do_a", compensation={"handler": "undo_a"})
    body.cancel_end("t_cancel").sequence("t_start", "a", "t_cancel")
    b = ProcessBuilder("tx").start().sub_process("tx", body, transaction=True)
    b.cancel_boundary("on_cancel", attached_to="tx").service_task("after", handler="after")
    b.end().end("never").sequence("start", "tx", "never").sequence("on_cancel", "after", "end")
    doc = b.build()
    iid = rt.run(doc)
    marks = marks_of(rt, doc, iid)
    assert statuses(marks)["a"] == diagram.COMPENSATED
    assert statuses(marks)["never"] == diagram.NOT_VISITED
    assert statuses(marks)["after"] == statuses(marks)["on_cancel"] == diagram.VISITED
    svg = rt.engine.diagram(iid, "svg")
    root = ET.fromstring(svg.encode("utf-8"))
    box = next(e for e in root.iter() if e.get("data-node") == "tx")
    borders = [r for r in box.iter() if r.tag.endswith("rect") and r.get("rx") in ("12", "9")]
    assert len(borders) == 2  # the double border
