"""Bad input is refused with an error naming what and where, and changes nothing.

Also: idempotent deploys and idempotent starts, including concurrent ones.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bpm.errors import BadVariables, InvalidDefinition, InvalidOperation, UnknownProcess
from bpm.store import Database
from bpm.store.schema import engine_events
from tests.helpers import db as rows
from tests.helpers.invariants import snapshot
from tests.helpers.processes import Doc, single_task
from tests.helpers.race import run_together
from tests.helpers.runtime import Calls, Harness


def base() -> Doc:
    """A valid process: start -> gw -(cond)-> work -> end; gw -(default)-> end."""
    return {
        "key": "orders",
        "nodes": [
            {"id": "start", "type": "startEvent"},
            {"id": "gw", "type": "exclusiveGateway", "default": "f_skip"},
            {"id": "work", "type": "serviceTask", "handler": "work"},
            {"id": "end", "type": "endEvent"},
        ],
        "flows": [
            {"id": "f1", "source": "start", "target": "gw"},
            {"id": "f_work", "source": "gw", "target": "work", "condition": "amount > 10"},
            {"id": "f_skip", "source": "gw", "target": "end"},
            {"id": "f2", "source": "work", "target": "end"},
        ],
    }


Mutation = Callable[[Doc], None]


def _make_parallel(gateway: dict[str, Any]) -> None:
    gateway["type"] = "parallelGateway"
    gateway.pop("default")


def node(doc: Doc, node_id: str) -> dict[str, Any]:
    return next(n for n in doc["nodes"] if n["id"] == node_id)


def flow(doc: Doc, flow_id: str) -> dict[str, Any]:
    return next(f for f in doc["flows"] if f["id"] == flow_id)


def add_node(**fields: Any) -> Mutation:
    return lambda d: d["nodes"].append(fields)


def add_flow(**fields: Any) -> Mutation:
    return lambda d: d["flows"].append(fields)


def set_on(getter: Callable[[Doc, str], dict[str, Any]], ident: str, **fields: Any) -> Mutation:
    return lambda d: getter(d, ident).update(fields)


def chain(*mutations: Mutation) -> Mutation:
    def run(d: Doc) -> None:
        for m in mutations:
            m(d)

    return run


def drop_start(d: Doc) -> None:
    d["nodes"] = [n for n in d["nodes"] if n["id"] != "start"]
    d["flows"] = [f for f in d["flows"] if f["id"] != "f1"]


def sub_without_start(d: Doc) -> None:
    d["nodes"].append(
        {
            "id": "sub",
            "type": "subProcess",
            "nodes": [{"id": "s_end", "type": "endEvent"}],
            "flows": [],
        }
    )
    flow(d, "f2")["target"] = "sub"
    d["flows"].append({"id": "f3", "source": "sub", "target": "end"})


# (case id, mutation, the element the error must name, a fragment of the message)
INVALID: list[tuple[str, Mutation, str, str]] = [
    (
        "unknown node type",
        add_node(id="mystery", type="fooTask"),
        "mystery",
        "unknown node type 'fooTask'",
    ),
    ("dangling flow target", set_on(flow, "f2", target="nowhere"), "f2", "dangling"),
    (
        "dangling flow source",
        add_flow(id="f_ghost", source="ghost", target="end"),
        "f_ghost",
        "dangling",
    ),
    ("unreachable node", add_node(id="island", type="task"), "island", "unreachable"),
    (
        "gateway without outgoing flows",
        chain(add_node(id="sink", type="parallelGateway"), set_on(flow, "f2", target="sink")),
        "sink",
        "at least one outgoing flow",
    ),
    (
        "unsafe condition: call",
        set_on(flow, "f_work", condition="__import__('os')"),
        "f_work",
        "__import__",
    ),
    (
        "unsafe condition: dunder attribute",
        set_on(flow, "f_work", condition="amount.__class__ == 1"),
        "f_work",
        "__class__",
    ),
    (
        "unsafe condition: lambda",
        set_on(flow, "f_work", condition="(lambda: 1)() == 1"),
        "f_work",
        "lambda",
    ),
    (
        "unparsable condition",
        set_on(flow, "f_work", condition="amount >"),
        "f_work",
        "does not parse",
    ),
    (
        "unparsable camunda condition",
        set_on(flow, "f_work", condition="${amount >}"),
        "f_work",
        "does not parse",
    ),
    (
        "compensationThrow naming an activity without compensation",
        add_node(id="undo", type="compensationThrow", activity="work"),
        "undo",
        "must be an activity of the same scope that declares a compensation",
    ),
    (
        "timer duration that is not ISO 8601",
        add_node(id="wait", type="timerEvent", duration="5 seconds"),
        "wait",
        "not an ISO 8601 duration",
    ),
    (
        "timer date that is not ISO 8601",
        add_node(id="wait", type="timerEvent", date="next tuesday"),
        "wait",
        "not an ISO 8601 date",
    ),
    (
        "timer with both a duration and a date",
        add_node(id="wait", type="timerEvent", duration="PT1S", date="2027-01-01T00:00:00Z"),
        "wait",
        "exactly one of 'duration'",
    ),
    (
        "unsafe timer expression",
        add_node(id="wait", type="timerEvent", duration="${__import__('os')}"),
        "wait",
        "__import__",
    ),
    (
        "receiveTask without a message",
        add_node(id="hear", type="receiveTask"),
        "hear",
        "needs 'message'",
    ),
    (
        "userTask with candidate_groups that are not a list",
        add_node(id="approve", type="userTask", candidate_groups="ops"),
        "approve",
        "candidate_groups",
    ),
    (
        "timer boundary on a gateway",
        add_node(id="late", type="boundaryEvent", attachedTo="gw", timer={"duration": "PT1H"}),
        "late",
        "can only be attached",
    ),
    (
        "non-interrupting error boundary",
        add_node(id="oops", type="boundaryEvent", attachedTo="work", error="*", interrupting=False),
        "oops",
        "always interrupting",
    ),
    (
        "both a handler and a topic",
        set_on(node, "work", topic="payments"),
        "work",
        "exactly one of 'handler'",
    ),
    (
        "unknown key typo on a node",
        set_on(node, "work", handlr="x"),
        "work",
        "unknown key 'handlr'",
    ),
    (
        "unknown key typo on a flow",
        set_on(flow, "f_work", conditon="x > 1"),
        "f_work",
        "unknown key 'conditon'",
    ),
    (
        "unknown key typo in retry",
        set_on(node, "work", retry={"max_attempt": 3}),
        "work",
        "unknown key 'max_attempt'",
    ),
    ("duplicate node id", add_node(id="work", type="task"), "work", "duplicate id"),
    (
        "flow id equal to a node id",
        add_flow(id="gw", source="work", target="end"),
        "gw",
        "duplicate id",
    ),
    (
        "two start events",
        chain(
            add_node(id="start2", type="startEvent"),
            add_flow(id="f_s2", source="start2", target="gw"),
        ),
        "start2",
        "second startEvent",
    ),
    ("subprocess without start event", sub_without_start, "sub", "no startEvent"),
    ("bad retry count", set_on(node, "work", retry={"max_attempts": 0}), "work", "max_attempts"),
    (
        "bad backoff duration",
        set_on(node, "work", retry={"backoff": "soon"}),
        "work",
        "'soon' is not an ISO 8601 duration",
    ),
    (
        "condition on a flow a parallel gateway takes anyway",
        lambda d: _make_parallel(node(d, "gw")),
        "f_work",
        "a flow leaving a parallelGateway cannot have a condition",
    ),
    (
        "default flow not leaving the task",
        set_on(node, "work", default="f_skip"),
        "work",
        "default flow 'f_skip' is not one of its outgoing flows",
    ),
    (
        "default flow not leaving the gateway",
        set_on(node, "gw", default="f2"),
        "gw",
        "default flow 'f2'",
    ),
    (
        "service task without handler",
        lambda d: node(d, "work").pop("handler"),
        "work",
        "exactly one of 'handler'",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "element", "fragment"), [pytest.param(m, e, f, id=case) for case, m, e, f in INVALID]
)
def test_invalid_definition_names_the_element_and_stores_nothing(
    rt: Harness, pg_db: Database, mutate: Mutation, element: str, fragment: str
) -> None:
    doc = base()
    rt.deploy(copy.deepcopy(doc))  # the valid base deploys
    mutate(doc)
    before = snapshot(pg_db)

    with pytest.raises(InvalidDefinition) as info:
        rt.engine.deploy(doc)
    message = str(info.value)
    assert fragment in message, message
    assert f"'{element}'" in message, message
    assert info.value.element == element
    assert snapshot(pg_db) == before


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        (
            {"key": "p", "nodes": [{"id": "end", "type": "endEvent"}], "flows": []},
            "has no startEvent",
        ),
        (
            {"key": "p", "saga": "sometimes", "nodes": [], "flows": []},
            "'saga' must be none, local or global",
        ),
        ({"key": "p", "nodez": [], "flows": []}, "unknown key 'nodez'"),
        ({"key": "no spaces allowed", "nodes": [], "flows": []}, "'key' must be a string"),
        ({"nodes": [], "flows": []}, "'key'"),
        ({"key": "p", "nodes": [], "flows": []}, "'nodes' must be a non-empty list"),
        (["not", "an", "object"], "JSON object"),
    ],
)
def test_invalid_process_level_definition(
    rt: Harness, pg_db: Database, doc: Any, fragment: str
) -> None:
    with pytest.raises(InvalidDefinition, match=fragment.replace("(", r"\(")):
        rt.engine.deploy(doc)
    assert rows.count_definitions(pg_db) == 0
    assert rows.history_size(pg_db) == 0


def test_deploy_is_idempotent_and_versions_changes(rt: Harness, pg_db: Database) -> None:
    doc = base()
    first = rt.engine.deploy(doc)
    assert (first.version, first.created) == (1, True)

    again = rt.engine.deploy(copy.deepcopy(doc))
    assert (again.id, again.version, again.created) == (first.id, 1, False)
    reordered = {k: doc[k] for k in reversed(list(doc))}  # key order is not content
    assert rt.engine.deploy(reordered).id == first.id

    changed = base()
    changed["name"] = "Orders, renamed"
    second = rt.engine.deploy(changed)
    assert (second.version, second.created) == (2, True) and second.id != first.id
    assert rt.engine.deploy(changed).id == second.id
    third = rt.engine.deploy(doc)  # back to the first graph: it is not the latest any more
    assert (third.version, third.created) == (3, True)

    assert rows.count_definitions(pg_db) == 3
    deployed = rows.engine_events_of(pg_db, None, type="DefinitionDeployed")
    assert [e["data"]["version"] for e in deployed] == [1, 2, 3]

    # Instances pin the version they started on; a version can be asked for.
    latest = rt.engine.start("orders", {"amount": 1}).id
    pinned = rt.engine.start("orders", {"amount": 1}, version=1).id
    assert rows.instance(pg_db, latest).process_def_id == third.id
    assert rows.instance(pg_db, pinned).process_def_id == first.id


def test_concurrent_deploys_of_one_document_store_one_version(rt: Harness, pg_db: Database) -> None:
    doc = base()
    results = run_together(
        [functools.partial(rt.engine.deploy, copy.deepcopy(doc)) for _ in range(4)]
    )
    assert len({r.id for r in results}) == 1
    assert sorted(r.created for r in results) == [False, False, False, True]
    assert rows.count_definitions(pg_db) == 1


def test_starting_an_unknown_process_is_refused(rt: Harness, pg_db: Database) -> None:
    rt.deploy(base())
    before = snapshot(pg_db)
    with pytest.raises(UnknownProcess, match="'nope'"):
        rt.engine.start("nope", {"a": 1})
    with pytest.raises(UnknownProcess, match="'orders' version 7"):
        rt.engine.start("orders", {"a": 1}, version=7)
    assert snapshot(pg_db) == before


@pytest.mark.parametrize(
    ("variables", "name", "fragment"),
    [
        ({"ok": 1, "tags": {"a", "b"}}, "tags", "'tags' is not JSON"),
        ({"ratio": math.nan}, "ratio", "nan is not a JSON number"),
        ({"limit": math.inf}, "limit", "inf is not a JSON number"),
        ({"when": datetime(2024, 1, 1, tzinfo=UTC)}, "when", "'when' is not JSON"),
        ({"nested": {"deep": [1, object()]}}, "nested", "'nested' is not JSON"),
        ({7: "seven"}, "7", "variable name 7"),
        ({"": "empty"}, "", "variable name ''"),
        ({"big": "x" * (1024 * 1024 + 1)}, "big", "exceed"),
    ],
)
def test_non_json_variables_are_refused_before_anything_is_written(
    rt: Harness, pg_db: Database, variables: dict[Any, Any], name: str, fragment: str
) -> None:
    rt.deploy(base())
    before = snapshot(pg_db)
    with pytest.raises(BadVariables) as info:
        rt.engine.start("orders", variables)
    assert fragment in str(info.value), str(info.value)
    assert "'orders'" in str(info.value)
    assert info.value.name == name
    assert rows.count_instances(pg_db) == 0
    assert snapshot(pg_db) == before


def test_variables_that_are_not_an_object_are_refused(rt: Harness, pg_db: Database) -> None:
    rt.deploy(base())
    with pytest.raises(BadVariables, match="must be a JSON object"):
        rt.engine.start("orders", [("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(InvalidOperation, match="business key"):
        rt.engine.start("orders", {}, business_key="")
    assert rows.count_instances(pg_db) == 0


def test_start_is_idempotent_by_business_key(rt: Harness, pg_db: Database, calls: Calls) -> None:
    calls.add("work")
    rt.deploy(single_task("orders"))
    first = rt.engine.start("orders", {"n": 1}, business_key="ORDER-1")
    again = rt.engine.start("orders", {"n": 2}, business_key="ORDER-1")
    assert first.created and not again.created
    assert again.id == first.id and again.business_key == "ORDER-1"
    rt.drain()
    finished = rt.engine.start("orders", {"n": 3}, business_key="ORDER-1")
    assert (finished.id, finished.state, finished.created) == (first.id, "COMPLETED", False)

    other = rt.engine.start("orders", {"n": 1}, business_key="ORDER-2")
    assert other.id != first.id
    assert rows.count_instances(pg_db) == 2
    assert rt.engine.show(first.id)["variables"] == {"n": 1}  # the duplicate changed nothing


def test_start_is_idempotent_by_idempotency_key(rt: Harness, pg_db: Database) -> None:
    rt.deploy(single_task("orders"))
    first = rt.engine.start("orders", {}, idempotency_key="celery-task-1")
    again = rt.engine.start("orders", {}, idempotency_key="celery-task-1", business_key="SOMETHING")
    assert again.id == first.id and not again.created
    assert rt.engine.start("orders", {}, idempotency_key="celery-task-2").id != first.id
    assert rows.count_instances(pg_db) == 2

    # The key is per process: another process may use the same one.
    rt.deploy(single_task("invoices"))
    assert rt.engine.start("invoices", {}, idempotency_key="celery-task-1").id != first.id


def test_concurrent_starts_with_one_key_create_one_instance(rt: Harness, pg_db: Database) -> None:
    rt.deploy(single_task("orders"))
    for n in range(5):
        results = run_together(
            [
                functools.partial(rt.engine.start, "orders", {"i": i}, business_key=f"K-{n}")
                for i in range(4)
            ]
        )
        assert len({r.id for r in results}) == 1
        assert sorted(r.created for r in results) == [False, False, False, True]
    assert rows.count_instances(pg_db) == 5
    started = [e for e in rows.engine_events_of(pg_db, None) if e["type"] == "InstanceStarted"]
    assert len(started) == 5
    # + DefinitionDeployed; each start also records its variables
    assert rows.count_rows(pg_db, engine_events) == 5 * 2 + 1


@pytest.mark.parametrize("nested", [{1: "one", "1": "uno"}, {None: 1}, {True: "yes"}])
def test_nested_non_string_keys_are_refused_not_rewritten(
    rt: Harness, pg_db: Database, calls: Calls, nested: dict[Any, Any]
) -> None:
    rt.deploy(single_task("orders"))
    started = None
    try:
        started = rt.engine.start("orders", {"m": nested})
    except BadVariables as exc:
        assert exc.name == "m"
    assert started is None, f"stored as {rt.engine.show(started.id)['variables']}"

    calls.add("work", lambda ctx: {"m": nested})
    iid = rt.start("orders", {})
    rt.drain()
    (incident,) = rows.incidents_of(pg_db, iid)
    assert "'m'" in incident.message


def test_the_start_key_is_the_idempotency_key_else_the_business_key_else_the_message(
    rt: Harness, pg_db: Database
) -> None:
    rt.deploy(single_task("orders"))
    # Two sends of one start by business key, in different messages: one instance.
    first = rt.engine.start("orders", {}, business_key="B-1", message_id="celery:m1")
    again = rt.engine.start("orders", {}, business_key="B-1", message_id="celery:m2")
    assert first.created and not again.created and again.id == first.id
    # Without a business key, the message id: a redelivery starts nothing new ...
    m3 = rt.engine.start("orders", {}, message_id="celery:m3")
    assert rt.engine.start("orders", {}, message_id="celery:m3").id == m3.id
    # ... and a new message does.
    assert rt.engine.start("orders", {}, message_id="celery:m4").id != m3.id
    # A distinct idempotency key is the way to a second instance for one business key.
    second = rt.engine.start("orders", {}, business_key="B-1", idempotency_key="B-1/2")
    assert second.created and second.id != first.id
    assert rows.count_instances(pg_db) == 4
    with pytest.raises(InvalidOperation, match="message id"):
        rt.engine.start("orders", {}, message_id="")
    assert rows.count_instances(pg_db) == 4
