"""BPMN conformance: every model of the shared corpus is deployed, then driven and compared.

For each model in ``../shared/conformance/manifest.json`` (beside the repository) the importer
either compiles it and the engine deploys it, or rejects it with ``InvalidDefinition`` and a
message naming a line (``OUTCOMES``). Each deployed model is then run once per scenario (the
manifest's ``harness`` and each ``additional_scenarios`` entry) and what the engine did is
compared with what the peer engine's own test asserts.

**Driving.** The harness is a small step language written as prose; ``_step`` understands each
form the corpus uses and fails on any other, so a new step is never skipped silently:

- ``start`` (``start with inputs``, ``execute``, ``run definition``, ``set data … on the start
  task``): start the instance with the scenario's inputs and run its jobs. A scenario whose
  steps do not start the instance starts it before its first step.
- ``complete X`` / ``signal X``: finish the wait state at ``X``: its open user task, the message
  its receive task or message event waits for, or its external task. ``X`` may be a quoted
  activity name (``activity_names``). A plain ``task`` is a pass-through here, so completing it
  only checks that it already completed (see ``DIFFERENCES``).
- ``advance_clock +PT…`` / ``advance_clock to start+PT…`` / ``fire timer job (X)`` /
  ``run due jobs``: move the fake clock, fire the due timers, run the jobs.
- ``expect_active [...]``, ``expect_ended``, ``expect_not_ready X``, ``expect N timer jobs``,
  ``expect one incident … on X``: checked against the instance (see ``_active``).

**Handlers.** Every handler name a model uses (``camunda:class`` / ``camunda:expression`` mapped
as in docs/bpmn.md) gets a recorder. The node named in the scenario's ``failing_tasks`` raises:
``exception`` -> ``RuntimeError(message)`` (every attempt), ``bpmn_error`` ->
``bpm.BpmnError(errorCode, message)``.

**The completion log** (``completion_log``) is derived from the instance's history, in history
order, and follows the corpus's notion of a completed activity:

- an activity (task, subprocess, intermediate or boundary event) completes when a token leaves
  it: a token ``MOVED``/``FORKED`` event whose ``data.from`` names it, or a token ``COMPLETED``
  at it (an activity without outgoing flows: an implicit end);
- an end event completes when its token ``COMPLETED`` at it (a compensation end event also
  when its token leaves it once the compensation is done);
- a compensation handler completes when its compensation token is ``COMPENSATED`` (the token
  sits at the compensated activity; ``CompensationTokenCreated`` names the handler); the
  compensation log (``compensation_log``) lists handlers in the order they started;
- start events and gateways are left out (the peers' logs leave them out);
- a token ``CANCELLED`` at a node (a boundary interrupted it, a terminate end event ended it)
  is not a completion.

**Final state.** Instance ``COMPLETED`` -> ``completed``, ``TERMINATED`` -> ``terminated``,
``RUNNING`` -> ``waiting``, ``FAILED`` -> ``error`` (the run ended in error; the engine keeps an
open incident on the failed token so an operator can retry it).

**Differences.** Where this engine deliberately differs from the peer, ``DIFFERENCES`` names the
check, pins what this engine does instead and says why; docs/bpmn.md ("Differences from other
engines") explains each. A documented difference whose check starts to agree with the peer
fails the test too, so the list stays true.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import bpm
from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.durations import parse_duration
from bpm.engine.operations.external import TopicRequest
from bpm.errors import InvalidDefinition
from bpm.handlers import HandlerContext, HandlerRegistry, HandlerResult
from tests.helpers.runtime import Harness
from tests.helpers.shared import CONFORMANCE, MISSING, SHARED

MANIFEST = CONFORMANCE / "manifest.json"

#: id -> "deployed" or the start of the rejection message (after "line N: ").
OUTCOMES: dict[str, str] = {}


@dataclass(frozen=True)
class Difference:
    """A check where this engine deliberately gives ``engine`` instead of the peer's value."""

    engine: Any
    reason: str


#: scenario id -> check -> the documented difference. A check is a manifest field without its
#: ``expected_`` prefix (``final_state``, ``completed_in_order``, ...) or ``step N: TEXT`` (N
#: counted from 1 in the scenario's ``harness``).
PASS_THROUGH = (
    "a plain bpmn:task is a pass-through here (Spiff runs it as a manual step the "
    "test drives), so the instance runs to its end at start: 'not ready' steps and "
    "the step-by-step order cannot be reproduced, only the happens-before "
    "constraints of the joins"
)
JOIN_DISCARD = (
    "BPMN token semantics: a parallel join waits for a token on every incoming flow; "
    "bpmn-elements counts a discarded (not taken) flow as arrived"
)
SPAWNED_END = (
    "a token reaching an end event while tokens spawned by its non-interrupting "
    "boundaries are alive waits there ('until spawned tokens end') and completes "
    "last; Camunda completes the end event at once"
)
EXCEPTION_CLASS = (
    "a handler's exception is never matched to an error boundary by its class "
    "name: only bpm.BpmnError(code) is caught; the exception fails the task, "
    "and the instance is FAILED with an incident"
)
FAILED_INCIDENT = (
    "after its retries a failing task's token is FAILED and, with no saga, the "
    "instance FAILED with an open incident (an operator can retry); Camunda "
    "keeps the instance running at the task"
)
TERMINATE_STATE = (
    "a terminate end event at top level cancels the other tokens and completes "
    "the instance (state COMPLETED, engine event ScopeTerminated)"
)
REVERSE_ORDER = (
    "compensation runs strictly one at a time in reverse success order "
    "(undoBookFlight, then undoBookHotel); Camunda opens both handlers together "
    "and the peer test completes undoBookHotel first"
)
THROW_WAITS = (
    "a compensation throw event waits (WAITING token) until its compensation is "
    "done, so it is active next to the handler; the peer step queries tasks only"
)

DIFFERENCES: dict[str, dict[str, Difference]] = {
    "parallel-multiple-splits-and-joins": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 6: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 10: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 12: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "completed_in_order": Difference(
            [
                "sid-57463471-693A-42A2-9EC6-6460BEDECA86",
                "sid-809B2A5A-4907-4CB6-A398-E93855AD6F20",
                "sid-CA089240-802A-4C32-9130-FB1A33DDCCC3",
                "sid-ABD788A3-CD57-4280-A22A-260B3AEEE138",
                "sid-3C0AE49A-7BE9-4D61-B409-AC5794825CDE",
                "sid-70192697-62E0-4F16-BE86-7945E95AC33A",
                "sid-E7B8898A-0D14-4E98-B3D7-736B94EE3FA7",
                "sid-1946C635-7886-4687-844F-C644FA6222B8",
                "sid-F3A979E3-F586-4807-8223-1FAB5A5647B0",
                "sid-51816945-79BF-47F9-BA3C-E95ABAE3D1DB",
            ],
            PASS_THROUGH,
        ),
    },
    "parallel-multiple-splits-and-joins/test2": {
        "step 2: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 6: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-multiple-splits-and-joins/test3": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 6: expect_not_ready '2 Done'": Difference("completed", PASS_THROUGH),
        "step 8: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 11: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-then-exclusive": {
        "step 2: expect 2 READY tasks": Difference(0, PASS_THROUGH),
        "step 4: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-then-exclusive/testRunThroughChoiceFirst": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-then-exclusive/testRunThroughChoiceThreadCompleteFirst": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "timer-boundary-interrupting-before-join": {
        "completed_in_order": Difference(["userTask"], JOIN_DISCARD),
        "final_state": Difference("waiting", JOIN_DISCARD),
    },
    "timer-boundary-interrupting-before-join/timer fires": {
        "completed_in_order": Difference(["boundTimeoutEvent"], JOIN_DISCARD),
        "final_state": Difference("waiting", JOIN_DISCARD),
    },
    "parallel-join-after-xor-discard": {
        "completed_in_order": Difference(["task"], JOIN_DISCARD),
        "final_state": Difference("waiting", JOIN_DISCARD),
    },
    "timer-boundary-noninterrupting-two-timers": {
        "step 14: expect_active [thirdTask]": Difference(["theEnd", "thirdTask"], SPAWNED_END),
        "completed_in_order": Difference(
            [
                "escalationTimer1",
                "secondTask",
                "escalatedEnd",
                "escalationTimer2",
                "firstTask",
                "thirdTask",
                "escalatedEnd",
                "theEnd",
            ],
            SPAWNED_END,
        ),
    },
    "error-thrown-by-service-task-caught-by-code/"
    "exception mapped by errorCode = exception class name": {
        "step 2: expect_active [escalatedTask]": Difference([], EXCEPTION_CLASS),
        "step 3: complete escalatedTask": Difference(
            "nothing to complete at escalatedTask (active: [])", EXCEPTION_CLASS
        ),
        "step 4: expect_ended": Difference("FAILED", EXCEPTION_CLASS),
        "completed_in_order": Difference([], EXCEPTION_CLASS),
        "final_state": Difference("error", EXCEPTION_CLASS),
    },
    "failing-service-task-no-boundary-incident": {
        "active_at_end": Difference([], FAILED_INCIDENT),
        "final_state": Difference("error", FAILED_INCIDENT),
    },
    "terminate-end-kills-parallel-branch": {
        "final_state": Difference("completed", TERMINATE_STATE),
    },
    "comp-nested-subprocesses": {
        "step 5: complete undoBookHotel ('Cancel Hotel')": Difference(
            "nothing to complete at undoBookHotel (active: ['throwing', 'undoBookFlight'])",
            REVERSE_ORDER,
        ),
        "step 7: expect_ended": Difference("RUNNING", REVERSE_ORDER),
        "completed_in_order": Difference(
            [
                "bookHotel",
                "bookFlight",
                "endInScopeFlight",
                "scopeFlight",
                "endInScope",
                "scopeHotel",
                "throwCompensation",
                "undoBookFlight",
            ],
            REVERSE_ORDER,
        ),
        "final_state": Difference("waiting", REVERSE_ORDER),
    },
    "comp-activity-inside-subprocess": {
        "step 4: expect_active [undoScopeTask] (single task)": Difference(
            ["throwCompensate", "undoScopeTask"], THROW_WAITS
        ),
    },
    "comp-handler-on-subprocess-boundary": {
        "step 2: expect_active [undoSubprocess] (single task)": Difference(
            ["throwCompensate", "undoSubprocess"], THROW_WAITS
        ),
    },
}

NOT_ACTIVITIES = {"startEvent", "exclusiveGateway", "parallelGateway"}
STATES = {
    "COMPLETED": "completed",
    "TERMINATED": "terminated",
    "RUNNING": "waiting",
    "FAILED": "error",
    "CANCELLED": "cancelled",
}
#: Steps that say nothing this engine can check, with the reason.
PROSE_STEPS = {
    "expect 3 executions (2 concurrent branches)": (
        "Camunda execution-tree internals; the active tasks are checked instead"
    ),
}


@dataclass
class Scenario:
    id: str
    case: dict[str, Any]
    harness: list[str]
    inputs: dict[str, Any]
    failing: list[dict[str, Any]]
    expected: dict[str, Any]


def _cases() -> list[dict[str, Any]]:
    if not MANIFEST.is_file():
        return []
    cases: list[dict[str, Any]] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return cases


def _scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    expected_fields = (
        "completed_in_order",
        "completed_any_order",
        "not_completed",
        "compensations_in_order",
        "active_at_end",
        "final_state",
    )
    for case in _cases():
        runs = [dict(case, name=None)] + [
            dict(extra) for extra in case.get("additional_scenarios", [])
        ]
        for index, run in enumerate(runs):
            sid = case["id"] if index == 0 else f"{case['id']}/{run.get('name') or index}"
            expected = {f: run[f"expected_{f}"] for f in expected_fields if f"expected_{f}" in run}
            out.append(
                Scenario(
                    sid,
                    case,
                    list(run.get("harness", case["harness"])),
                    dict(run.get("inputs", case.get("inputs", {}))),
                    list(run.get("failing_tasks", case.get("failing_tasks", []))),
                    expected,
                )
            )
    return out


def _path(case: dict[str, Any]) -> Path:
    return (
        SHARED.parent / case["public_copy"]
        if "public_copy" in case
        else CONFORMANCE / "public" / Path(case["path"]).name
    )


#: The key under which each scenario's (id, outcome) ("passed", "documented difference (…)" or
#: "rejected at deploy: …") is recorded on its test report; tests/conftest.py prints them all
#: after the run, from whichever worker process ran them.
CONFORMANCE_PROPERTY = "bpmn-conformance"


@pytest.mark.skipif(not MANIFEST.is_file(), reason=MISSING)
@pytest.mark.parametrize("case", _cases(), ids=lambda c: str(c["id"]))
def test_model_is_imported_and_deployed_or_clearly_rejected(
    rt: Harness, case: dict[str, Any]
) -> None:
    path = _path(case)
    assert path.is_file(), path
    xml = path.read_text(encoding="utf-8")
    expected = OUTCOMES.get(case["id"], "deployed")
    try:
        documents = compile_bpmn(xml)
    except InvalidDefinition as exc:
        message = str(exc)
        assert message.startswith("line "), message
        assert expected != "deployed", f"{case['id']} was rejected: {message}"
        assert message.split(": ", 1)[1].startswith(expected), message
        return
    assert expected == "deployed", f"{case['id']} compiled, but is recorded as rejected"
    assert case["process_id"] in [doc["key"] for doc in documents]
    for doc in documents:
        deployed = rt.engine.deploy(doc, source=xml, source_format="bpmn")
        assert deployed.created and deployed.key == doc["key"]
    again = rt.engine.deploy_bpmn(xml)
    assert [d.created for d in again] == [False] * len(documents)


# The model as compiled: node types and what each node waits for.


def _walk(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        yield node
        yield from _walk(node.get("nodes", []))


@dataclass
class Model:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    outgoing: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, documents: list[dict[str, Any]]) -> Model:
        model = cls()
        for doc in documents:
            for node in _walk(doc["nodes"]):
                model.nodes[node["id"]] = node
            for scope in [doc, *_walk(doc["nodes"])]:
                for flow in scope.get("flows", []):
                    model.outgoing[flow["source"]] = model.outgoing.get(flow["source"], 0) + 1
        return model

    def type(self, node_id: str) -> str:
        return str(self.nodes[node_id]["type"]) if node_id in self.nodes else "?"

    def handlers(self) -> set[str]:
        return {str(n["handler"]) for n in self.nodes.values() if "handler" in n}


def compensation_handlers(trace: list[dict[str, Any]]) -> dict[str, str]:
    """Compensation token id -> its handler's node. A compensation token sits at the node of
    the activity it undoes; the record it runs (``CompensationTokenCreated``) names the handler:
    ``node:ID`` for a BPMN handler activity, else the compensated activity itself."""
    out: dict[str, str] = {}
    for event in trace:
        if event["type"] == "CompensationTokenCreated" and event.get("token_id"):
            handler = str((event.get("data") or {}).get("handler", ""))
            out[str(event["token_id"])] = (
                handler.removeprefix("node:")
                if handler.startswith("node:")
                else str(event["node_id"])
            )
    return out


def completion_log(model: Model, trace: list[dict[str, Any]]) -> list[str]:
    """The activities the instance completed, in history order (rules: module docstring)."""
    handlers = compensation_handlers(trace)
    log: list[str] = []
    for event in trace:
        if event["kind"] != "token":
            continue
        data = event.get("data") or {}
        node = event["node_id"]
        if event["type"] in ("MOVED", "FORKED") and data.get("from"):
            done = str(data["from"])
        elif event["type"] == "COMPENSATED":
            done = handlers.get(str(event.get("token_id")), str(node))
        elif event["type"] in ("COMPLETED", "ERROR_THROWN") and node:
            done = str(node)
        else:
            continue
        if model.type(done) not in NOT_ACTIVITIES:
            log.append(done)
    return log


def compensation_log(trace: list[dict[str, Any]]) -> list[str]:
    """The compensation handlers in the order they started (``CompensationTokenCreated``), so
    a handler still open (a user task) counts, as it does for the peers."""
    handlers = compensation_handlers(trace)
    return [
        handlers[str(e["token_id"])]
        for e in trace
        if e["type"] == "CompensationTokenCreated" and e.get("token_id")
    ]


def _matches_in_order(expected: list[Any], actual: list[str]) -> bool:
    """``actual`` is ``expected`` with each nested list (an unordered group) in some order."""
    position = 0
    for item in expected:
        group = item if isinstance(item, list) else [item]
        if sorted(actual[position : position + len(group)]) != sorted(group):
            return False
        position += len(group)
    return position == len(actual)


# Driving the harness.


@dataclass
class Run:
    rt: Harness
    model: Model
    scenario: Scenario
    names: dict[str, str]
    iid: UUID | None = None
    started_at: datetime | None = None

    def start(self) -> None:
        assert self.iid is None, "started twice"
        self.started_at = self.rt.clock.now()
        inputs = {name: self.input_value(value) for name, value in self.scenario.inputs.items()}
        self.iid = self.rt.engine.start(self.scenario.case["process_id"], inputs).id
        self.rt.drain()

    @property
    def instance(self) -> UUID:
        assert self.iid is not None, "not started"
        return self.iid

    def show(self) -> dict[str, Any]:
        return self.rt.engine.show(self.instance)

    def node(self, text: str) -> str:
        name = text.strip().strip("'\"")
        return self.names.get(name, name)

    def active(self) -> list[str]:
        """Nodes where the instance waits: live tokens (not the parent token of a subprocess,
        not a token waiting at a join) and open tasks."""
        shown = self.show()
        handlers = compensation_handlers(self.rt.engine.trace(self.instance))
        found = {
            handlers.get(t["id"], t["node_id"])
            for t in shown["tokens"]
            if t["state"] in ("ACTIVE", "WAITING")
            and self.model.type(t["node_id"]) not in ("subProcess", *NOT_ACTIVITIES)
        }
        found |= {
            handlers.get(t["token_id"], t["node_id"])
            for t in shown["tasks"]
            if t["state"] in ("READY", "LOCKED")
        }
        return sorted(found)

    def complete(self, node_id: str) -> str | None:
        """Finish the wait state at ``node_id``; returns a mismatch, or None."""
        engine = self.rt.engine
        node = self.model.nodes.get(node_id)
        if node is None:
            return f"{node_id} is not a node of the model"
        if node["type"] in ("task", "manualTask"):
            done = completion_log(self.model, engine.trace(self.instance))
            return None if node_id in done else f"pass-through {node_id} has not completed"
        handlers = compensation_handlers(engine.trace(self.instance))
        tokens = {t["id"]: t["token_id"] for t in self.show()["tasks"]}
        for task in engine.user_tasks(instance_id=self.instance):
            if handlers.get(tokens[task["id"]], task["node_id"]) == node_id:
                engine.complete_user_task(task["id"])
                self.rt.drain()
                return None
        if "message" in node:
            engine.correlate(str(node["message"]), instance_id=self.instance)
            self.rt.drain()
            return None
        if "topic" in node:
            locked = engine.fetch_and_lock(
                "conformance", [TopicRequest(str(node["topic"]), timedelta(minutes=5))]
            )
            for external_task in locked:
                engine.complete(external_task.id, "conformance")
            self.rt.drain()
            return None if locked else f"no external task open at {node_id}"
        return f"nothing to complete at {node_id} (active: {self.active()})"

    def input_value(self, value: Any) -> Any:
        """The manifest writes clock-relative inputs as ``<now + 0.01 s, ISO-8601 string>``."""
        if isinstance(value, str) and (
            match := re.fullmatch(r"<now \+ ([\d.]+) s, ISO-8601 string>", value)
        ):
            return (self.rt.clock.now() + timedelta(seconds=float(match[1]))).isoformat()
        return value

    def pass_time(self, until: datetime) -> None:
        self.rt.clock.move_to(until)
        self.rt.engine.fire_due_timers()
        self.rt.drain()

    def timers(self) -> list[dict[str, Any]]:
        return [t for t in self.show()["timers"] if t["state"] == "SCHEDULED"]

    def step(self, text: str) -> tuple[Any, Any] | None:
        """Run one harness step; returns (expected, actual) when a check disagrees."""
        words = text.split()
        verb = words[0]
        if text in PROSE_STEPS:
            return None
        if (
            text.startswith(("run engine steps", "wait for ", "execute available jobs"))
            or text == "run due jobs"
        ):
            self.rt.engine.fire_due_timers()
            self.rt.drain()
            return None
        if verb in ("start", "execute", "set") or text == "run definition":
            self.start()
            return None
        if verb in ("complete", "signal"):
            target = re.sub(r"\s*\(.*\)$|\s+with( data)? \{.*\}$", "", text.split(" ", 1)[1])
            problem = self.complete(self.node(target))
            return None if problem is None else ("completed", problem)
        if match := re.fullmatch(r"sleep ([\d.]+) s", text):
            # Spiff moves a due timer only when refresh_timers is called: time alone passes.
            self.rt.clock.move_to(self.rt.clock.now() + timedelta(seconds=float(match[1])))
            return None
        if text == "refresh_timers":
            self.rt.engine.fire_due_timers()
            self.rt.drain()
            return None
        if match := re.match(r"expect (?:still )?(\d+) WAITING(?: task)?\b", text):
            # Spiff's READY ("fired, not yet run") has no counterpart here: a fired timer
            # moves its token on in the same transaction, so only the WAITING count is checked.
            waiting = len(self.active())
            return None if waiting == int(match[1]) else (int(match[1]), waiting)
        if verb == "advance_clock":
            amount = words[1]
            base = self.rt.clock.now()
            if amount == "to":
                assert self.started_at is not None
                base, amount = self.started_at, words[2].removeprefix("start")
            self.pass_time(base + _duration(amount.removeprefix("+")))
            return None
        if text.startswith("do not signal;"):
            self.pass_time(self.rt.clock.now() + _duration(words[3]))
            return None
        if text.startswith("fire timer job"):
            due = [datetime.fromisoformat(t["fire_at"]) for t in self.timers()]
            if not due:
                return ("a scheduled timer", "none")
            self.pass_time(min(due))
            return None
        if match := re.match(r"expect (\d+|one) (timer )?jobs?$", text):
            count = 1 if match[1] == "one" else int(match[1])
            scheduled = len(self.timers())
            return None if scheduled == count else (count, scheduled)
        if match := re.match(r"expect_active \[(.*?)\]|expect activity tree \[(.*?)\]", text):
            wanted = sorted(
                self.node(n) for n in (match[1] or match[2] or "").split(",") if n.strip()
            )
            now_active = self.active()
            return None if now_active == wanted else (wanted, now_active)
        if match := re.match(r"expect (\w+) postponed", text):
            return None if self.active() == [match[1]] else ([match[1]], self.active())
        if text.startswith("expect no READY/WAITING"):
            return None if self.active() == [] else ([], self.active())
        if text == "expect_ended":
            state = self.show()["state"]
            return None if state in ("COMPLETED", "TERMINATED") else ("ended", state)
        if verb == "expect_not_ready":
            node_id = self.node(text.split(" ", 1)[1])
            done = completion_log(self.model, self.rt.engine.trace(self.instance))
            ready = node_id in done or node_id in self.active()
            return (
                None if not ready else ("not ready", "completed" if node_id in done else "active")
            )
        if match := re.match(r"expect (\d+) READY tasks", text):
            actual = len(self.active())
            return None if actual == int(match[1]) else (int(match[1]), actual)
        if match := re.match(r"expect one incident .* on (\w+)$", text):
            nodes = [i["node_id"] for i in self.show()["incidents"] if i["state"] == "OPEN"]
            return None if nodes == [match[1]] else ([match[1]], nodes)
        if match := re.match(r"historic end activity == (\w+)$", text):
            done = completion_log(self.model, self.rt.engine.trace(self.instance))
            ends = [n for n in done if self.model.type(n) == "endEvent"]
            return None if ends[-1:] == [match[1]] else (match[1], ends)
        raise AssertionError(f"harness step not understood: {text!r}")


def _duration(text: str) -> timedelta:
    return parse_duration(text, where="harness step", element=None)


def _handlers(registry: HandlerRegistry, model: Model, failing: list[dict[str, Any]]) -> None:
    by_node = {str(f["id"]): f for f in failing}

    def recorder(ctx: HandlerContext) -> HandlerResult:
        failure = by_node.get(ctx.node_id)
        if failure is None:
            return None
        if failure["failure"] == "bpmn_error":
            raise bpm.BpmnError(str(failure["errorCode"]), str(failure.get("message", "")))
        raise RuntimeError(str(failure.get("message") or failure.get("type") or "failure"))

    for name in model.handlers():
        registry.register(name, recorder, replace=True)


def _checks(run: Run, scenario: Scenario) -> dict[str, tuple[Any, Any]]:
    """Every expectation of the scenario -> (peer's value, this engine's value)."""
    trace = run.rt.engine.trace(run.instance)
    log = completion_log(run.model, trace)
    expected = scenario.expected
    out: dict[str, tuple[Any, Any]] = {}
    if "completed_in_order" in expected:
        want = expected["completed_in_order"]
        # activities whose position the peer does not fix are checked by completed_any_order
        unplaced = set(expected.get("completed_any_order", []))
        placed = [n for n in log if n not in unplaced]
        out["completed_in_order"] = (want, want if _matches_in_order(want, placed) else placed)
    if expected.get("completed_any_order"):
        want = sorted(expected["completed_any_order"])
        out["completed_any_order"] = (want, sorted(n for n in want if n in log))
    if "not_completed" in expected:
        out["not_completed"] = ([], [n for n in expected["not_completed"] if n in log])
    if "compensations_in_order" in expected:
        want = expected["compensations_in_order"]
        got = compensation_log(trace)
        out["compensations_in_order"] = (want, want if _matches_in_order(want, got) else got)
    if "active_at_end" in expected:
        out["active_at_end"] = (sorted(expected["active_at_end"]), run.active())
    if "final_state" in expected:
        state = run.show()["state"]
        out["final_state"] = (expected["final_state"], STATES.get(state, state))
    return out


@pytest.mark.skipif(not MANIFEST.is_file(), reason=MISSING)
@pytest.mark.parametrize("scenario", _scenarios(), ids=lambda s: s.id)
def test_model_runs_as_the_peer_test_asserts(
    rt: Harness, handlers: HandlerRegistry, scenario: Scenario, request: pytest.FixtureRequest
) -> None:
    case = scenario.case
    if case["id"] in OUTCOMES:
        verdict = f"rejected at deploy: {OUTCOMES[case['id']]}"
        request.node.user_properties.append((CONFORMANCE_PROPERTY, (scenario.id, verdict)))
        pytest.skip(verdict)
    xml = _path(case).read_text(encoding="utf-8")
    model = Model.of(compile_bpmn(xml))
    _handlers(handlers, model, scenario.failing)
    rt.engine.deploy_bpmn(xml)
    names = {str(v): str(k) for k, v in case.get("activity_names", {}).items()}
    run = Run(rt, model, scenario, names)
    checks: dict[str, tuple[Any, Any]] = {}
    steps = scenario.harness
    if not re.match(r"(start|execute|set|run definition)", steps[0]):
        run.start()
    for number, text in enumerate(steps, start=1):
        outcome = run.step(text)
        if outcome is not None:
            checks[f"step {number}: {text}"] = outcome
    checks.update(_checks(run, scenario))
    known = DIFFERENCES.get(scenario.id, {})
    problems = [
        f"{name}: peer {want!r}, engine {got!r}"
        for name, (want, got) in checks.items()
        if want != got and name not in known
    ]
    for name, difference in known.items():
        want, got = checks.get(name, (None, None))
        if want == got:
            problems.append(f"{name}: documented as a difference but agrees with the peer")
        elif got != difference.engine:
            problems.append(f"{name}: documented engine value {difference.engine!r}, got {got!r}")
    assert not problems, f"{scenario.id}:\n  " + "\n  ".join(problems)
    verdict = "documented difference (" + "; ".join(known) + ")" if known else "passed"
    request.node.user_properties.append((CONFORMANCE_PROPERTY, (scenario.id, verdict)))
