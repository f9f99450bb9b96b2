"""A scenario's run: what the engine holds for the scenario's instances, and the steps that act
on it, all through the engine's public facade.

The scenario's instances are every instance in the test's own database (each test has a fresh
one): the instance ``start`` started, those it called, those ``start_process`` started and
those a message, signal or timer start event created.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from bpm.errors import BpmError, NoMatchingWait
from bpm.states import TaskState
from bpm.store.job_queries import FoundJob, JobKind, JobQuery
from bpm.store.paging import Page
from bpm.store.task_queries import ExternalTaskQuery
from tests.helpers.runtime import Harness
from tests.integration.conformance.corpus import Scenario
from tests.integration.conformance.logs import Event, compensation_handlers, completion_log, merged
from tests.integration.conformance.model import NOT_ACTIVITIES, SCOPE_TYPES, Model

#: Enough rows for any scenario (the listings are paged).
LIMIT = 1000
WORKER = "conformance"
LIVE_TOKEN = ("ACTIVE", "WAITING")
ENDED = ("COMPLETED", "TERMINATED", "CANCELLED")
STATES = {
    "COMPLETED": "completed",
    "TERMINATED": "terminated",
    "RUNNING": "waiting",
    "FAILED": "error",
    "CANCELLED": "cancelled",
}


def same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, "5" is not 5, but 5 and 5.0 are the same number."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    if all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b)):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


class MissingOperation(AssertionError):
    """A step whose engine operation does not exist yet: the scenario fails, naming it."""


@dataclass(frozen=True)
class StepError:
    """A step whose engine call raised: the run ended in error there."""

    number: int
    text: str
    error: BpmError


@dataclass(frozen=True)
class Live:
    """A live token of one of the scenario's instances, under the manifest's names."""

    token: dict[str, Any]
    instance: str
    process: str
    #: Where the token is, or the handler a compensation token runs.
    label: str
    #: A scope's token (subprocess, call activity, ...) or a multi-instance body's.
    holder: bool
    #: A multi-instance body's: a token whose live children sit at its own node.
    body: bool


@dataclass(frozen=True)
class OpenTask:
    token: str
    #: The manifest's name of its activity (of the handler, for a compensation handler's).
    label: str


@dataclass
class Run:
    rt: Harness
    model: Model
    scenario: Scenario
    names: dict[str, str]
    first: UUID | None = None
    started_at: datetime | None = None
    error: StepError | None = None

    # What the engine holds.

    def instances(self) -> list[dict[str, Any]]:
        """The scenario's instances, oldest first."""
        return list(reversed(self.rt.engine.find_instances(limit=LIMIT)))

    @property
    def instance(self) -> UUID:
        """The first instance: the one ``start`` started, else the oldest."""
        if self.first is not None:
            return self.first
        found = self.instances()
        assert found, "the scenario has no instance"
        return UUID(found[0]["id"])

    def instance_of(self, process: str | None) -> UUID:
        """The first instance, or the live instance of ``process`` (its last once ended)."""
        if process is None:
            return self.instance
        found = [i for i in self.instances() if i["key"] == process]
        live = [i for i in found if i["ended_at"] is None]
        assert len(live) <= 1, f"{len(live)} live instances of {process}"
        assert found, f"no instance of {process}"
        return UUID((live or found)[-1]["id"])

    def history(self) -> list[Event]:
        engine = self.rt.engine
        return merged([(str(i["key"]), engine.trace(i["id"])) for i in self.instances()])

    def node(self, text: str) -> str:
        """A step's activity: an id, ``P/X``, or a quoted name (``activity_names``)."""
        name = text.strip().strip("'\"")
        return self.names.get(name, name)

    def live(self) -> list[Live]:
        handlers = compensation_handlers(self.history())
        out: list[Live] = []
        for inst in self.instances():
            shown = self.rt.engine.show(inst["id"])
            process = str(inst["key"])
            tokens = [t for t in shown["tokens"] if t["state"] in LIVE_TOKEN]
            bodies = {(t["parent_token_id"], t["node_id"]) for t in tokens}
            for t in tokens:
                scope = self.model.type(self.model.label(process, t["node_id"])) in SCOPE_TYPES
                body = (t["id"], t["node_id"]) in bodies
                holder = scope or body or t["wait_kind"] == "CALLED"
                label = self.model.label(process, handlers.get(t["id"], t["node_id"]))
                out.append(Live(t, inst["id"], process, label, holder, body))
        return out

    def open_tasks(self) -> dict[str, OpenTask]:
        """The open tasks (user, external, handler) by id."""
        handlers = compensation_handlers(self.history())
        out: dict[str, OpenTask] = {}
        for inst in self.instances():
            for task in self.rt.engine.show(inst["id"])["tasks"]:
                if task["state"] in ("READY", "LOCKED"):
                    node = handlers.get(task["token_id"], task["node_id"])
                    label = self.model.label(str(inst["key"]), node)
                    out[task["id"]] = OpenTask(task["token_id"], label)
        return out

    def waits(self) -> dict[str, str]:
        """Token id -> name of every wait state: live tokens that are not scopes, gateways or
        start events, and open tasks."""
        out = {
            w.token["id"]: w.label
            for w in self.live()
            if not w.holder and self.model.type(self._at(w)) not in NOT_ACTIVITIES
        }
        for w in self.live():  # at an event-based gateway the events after it wait, as Camunda
            if w.token["wait_kind"] == "EVENT":
                for event in self.model.after(w.process, w.token["node_id"]):
                    out[f"{w.token['id']}:{event}"] = event
        out.update((task.token, task.label) for task in self.open_tasks().values())
        return out

    def _at(self, w: Live) -> str:
        return self.model.label(w.process, w.token["node_id"])

    def active(self) -> list[str]:
        return sorted(set(self.waits().values()))

    def count(self, label: str) -> int:
        """How many instances of activity ``label`` are active (its tokens and open tasks, not
        a multi-instance body's token)."""
        tokens = {w.token["id"] for w in self.live() if w.label == label and not w.body}
        tokens |= {task.token for task in self.open_tasks().values() if task.label == label}
        return len(tokens)

    def scopes_of(self, label: str) -> list[list[str]]:
        """For each live token at ``label``: the scopes it runs in, outermost first (the
        scope tokens among its ancestors)."""
        out: list[list[str]] = []
        for w in self.live():
            if w.label != label:
                continue
            tokens = {t["id"]: t for t in self.rt.engine.show(w.instance)["tokens"]}
            chain: list[str] = []
            parent, seen = w.token["parent_token_id"], {w.token["id"]}
            while parent in tokens and parent not in seen:
                seen.add(parent)
                above = tokens[parent]
                scope = self.model.label(w.process, above["node_id"])
                if self.model.type(scope) in SCOPE_TYPES:
                    chain.insert(0, scope)
                parent = above["parent_token_id"]
            out.append(chain)
        return out

    def incidents(self) -> list[str]:
        """The activities of the open incidents."""
        return [
            self.model.label(str(inst["key"]), incident["node_id"])
            for inst in self.instances()
            for incident in self.rt.engine.show(inst["id"])["incidents"]
            if incident["state"] == "OPEN"
        ]

    def timers(self) -> list[FoundJob]:
        return self.rt.engine.find_jobs(JobQuery(kinds=[JobKind.TIMER]))

    def final_state(self) -> str:
        """The state of the scenario's instances together: ``error`` if a step's call failed
        or any instance failed, else ``waiting`` while any is running, else the first's."""
        states = [str(i["state"]) for i in self.instances()]
        if self.error is not None:
            return "error"
        if not states:
            return "no instance"
        for state in ("FAILED", "RUNNING"):
            if state in states:
                return STATES[state]
        first = str(self.rt.engine.show(self.instance)["state"])
        return STATES.get(first, first)

    def variables_seen(self, token: str) -> dict[str, Any]:
        """The variables ``token`` sees: its open user task's view, else the local variables of
        its own scope, then of each token above it, over the instance's."""
        tasks = self.open_tasks()
        for task in self.rt.engine.user_tasks(limit=LIMIT):
            if task["id"] in tasks and tasks[task["id"]].token == token:
                return self.rt.engine.user_task_variables(task["id"])
        [inst] = [w.instance for w in self.live() if w.token["id"] == token]
        shown = self.rt.engine.show(inst)
        parents = {t["id"]: t["parent_token_id"] for t in shown["tokens"]}
        scopes = {s["token_id"]: s["variables"] for s in shown["local_variables"]}
        seen = dict(shown["variables"])
        chain: list[str] = []
        current: str | None = token
        while current is not None and current not in chain:
            chain.append(current)
            current = parents.get(current)
        for scope in reversed(chain):
            seen.update(scopes.get(scope, {}))
        return seen

    # What the steps do.

    def start(self, business_key: str | None = None) -> None:
        assert self.first is None, "started twice"
        self.started_at = self.rt.clock.now()
        inputs = {name: self.input_value(value) for name, value in self.scenario.inputs.items()}
        key = self.scenario.case["process_id"]
        self.first = self.rt.engine.start(key, inputs, business_key=business_key).id
        self.rt.drain()

    def start_process(self, process: str) -> None:
        self.rt.engine.start(process)
        self.rt.drain()

    def input_value(self, value: Any) -> Any:
        """The manifest writes clock-relative inputs as ``<now + 0.01 s, ISO-8601 string>``."""
        if isinstance(value, str) and (
            match := re.fullmatch(r"<now \+ ([\d.]+) s, ISO-8601 string>", value)
        ):
            return (self.rt.clock.now() + timedelta(seconds=float(match[1]))).isoformat()
        return value

    def complete(self, label: str, variables: dict[str, Any] | None) -> str | None:
        """Finish the wait state at ``label`` (the one created first, lowest ``loopCounter``
        first), writing ``variables`` first; returns a mismatch, or None."""
        engine = self.rt.engine
        node = self.model.node(label)
        if node is None:
            return f"{label} is not a node of the model"
        if node["type"] in ("task", "manualTask"):
            if label not in self.completion_log():
                return f"pass-through {label} has not completed"
            return self.holds(variables)
        at = {task_id for task_id, task in self.open_tasks().items() if task.label == label}
        users = [t["id"] for t in engine.user_tasks(limit=LIMIT) if t["id"] in at]
        if users:
            if len(users) > 1:
                users.sort(key=self.loop_counter)
            engine.complete_user_task(users[0], variables)
            self.rt.drain()
            return None
        if "message" in node:
            return self.deliver(label, str(node["message"]), variables)
        if "topic" in node:
            external = [
                t.id
                for t in engine.find_external_tasks(ExternalTaskQuery(), Page(limit=LIMIT))
                if str(t.id) in at and t.state == TaskState.READY
            ]
            if not external:
                return f"no external task open at {label}"
            engine.lock(external[0], WORKER, timedelta(minutes=5))
            engine.complete(external[0], WORKER, variables)
            self.rt.drain()
            return None
        return f"nothing to complete at {label} (active: {self.active()})"

    def loop_counter(self, task_id: str) -> float:
        value = self.rt.engine.user_task_variables(task_id).get("loopCounter")
        return float(value) if isinstance(value, int) else math.inf

    def holds(self, variables: dict[str, Any] | None) -> str | None:
        """For a pass-through (it ran at start): the data the peer sets there already holds."""
        held = self.rt.engine.show(self.instance)["variables"]
        wrong = {k: held.get(k) for k, v in (variables or {}).items() if not same(held.get(k), v)}
        return f"the instance holds {wrong}, not {variables}" if wrong else None

    def deliver(self, label: str, message: str, variables: dict[str, Any] | None) -> str | None:
        """The message the token at ``label`` waits for, to that token's instance."""
        at = [
            w.instance
            for w in self.live()
            if self._at(w) == label and w.token["wait_kind"] == "MESSAGE"
        ]
        if not at:
            return f"no token waits at {label} for message {message!r}"
        self.rt.engine.correlate(message, instance_id=at[0], variables=variables)
        self.rt.drain()
        return None

    def correlate(self, message: str) -> None:
        """One message, no payload, to a waiting subscription of a live instance, else to a
        message start event; nobody receiving it is an error (``NoMatchingWait``)."""
        for inst in self.instances():
            if inst["ended_at"] is not None:
                continue
            try:
                self.rt.engine.correlate(message, instance_id=inst["id"])
            except NoMatchingWait:
                continue
            self.rt.drain()
            return
        if self.model.message_starts(message):
            self.rt.engine.correlate(message, start_messages_only=True)
            self.rt.drain()
            return
        raise NoMatchingWait(f"no instance of the scenario waits for message {message!r}")

    def broadcast(self, signal: str) -> None:
        """Camunda's ``runtimeService.signalEventReceived``: a broadcast to every subscription
        of the test's database (``Engine.throw_signal``), then its deliveries and their jobs."""
        self.rt.engine.throw_signal(signal)
        self.rt.drain()

    def set_variables(self, process: str | None, values: dict[str, Any]) -> None:
        self.rt.engine.set_variables(self.instance_of(process), values)
        self.rt.drain()

    def run_due(self) -> None:
        self.rt.engine.fire_due_timers()
        self.rt.drain()

    def pass_time(self, until: datetime, *, fire: bool = True) -> None:
        self.rt.clock.move_to(until)
        if fire:
            self.run_due()

    def fire_timer(self) -> str | None:
        """Fire the timer due first; returns its activity, None when none is scheduled."""
        due = sorted((t.due_at, str(t.id), t) for t in self.timers() if t.due_at is not None)
        if not due:
            return None
        at, _, timer = due[0]
        self.pass_time(at)
        return self.model.label(timer.process_key, timer.node_id)

    def completion_log(self) -> list[str]:
        return completion_log(self.model, self.history())
