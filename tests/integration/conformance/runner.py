"""Playing a scenario: each step's action, then the checks of what it and its annotations
claim, as (the peer's value, this engine's value) for each check that disagrees."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from bpm.errors import BpmError
from bpm.handlers import HandlerRegistry
from bpm.store.job_queries import JobKind, JobQuery
from tests.helpers.runtime import Harness
from tests.integration.conformance.annotations import (
    Comment,
    InScopes,
    Named,
    Note,
    NotFired,
    RaisesError,
    Typed,
)
from tests.integration.conformance.checks import final_checks
from tests.integration.conformance.corpus import Scenario
from tests.integration.conformance.deployment import Compiled, deploy, register_handlers
from tests.integration.conformance.driver import ENDED, MissingOperation, Run, StepError, same
from tests.integration.conformance.logs import left
from tests.integration.conformance.steps import (
    Action,
    Broadcast,
    Complete,
    Correlate,
    ExpectActive,
    ExpectBusinessKey,
    ExpectEndActivity,
    ExpectEnded,
    ExpectIncident,
    ExpectInstances,
    ExpectInstanceVariable,
    ExpectJobs,
    ExpectNotReady,
    ExpectOpen,
    ExpectProcessInstances,
    ExpectVariables,
    FireTimer,
    PassTime,
    Prose,
    Raw,
    RunDue,
    SetVariables,
    Start,
    StartProcess,
    Step,
    parse,
)

Outcome = tuple[Any, Any] | None
ABSENT = "<absent>"


def _agree(want: Any, got: Any) -> Outcome:
    return None if same(want, got) else (want, got)


def expects_error(run: Run) -> bool:
    expected = run.scenario.expected
    return expected.get("final_state") == "error" or "error" in expected


def run_scenario(
    rt: Harness, handlers: HandlerRegistry, scenario: Scenario, compiled: Compiled
) -> dict[str, tuple[Any, Any]]:
    """Deploy the case, play the scenario's steps, then check its expectations: every check
    as (the peer's value, this engine's value)."""
    steps = [parse(text) for text in scenario.harness]
    register_handlers(handlers, compiled.model, scenario)
    zero = rt.clock.now()  # deploy time: where "start+" counts from until a start
    deploy(rt, compiled)
    names = {str(v): str(k) for k, v in scenario.case.get("activity_names", {}).items()}
    run = Run(rt, compiled.model, scenario, names, started_at=zero)
    checks = play(run, steps)
    checks.update(final_checks(run))
    return checks


def play(run: Run, steps: list[Step]) -> dict[str, tuple[Any, Any]]:
    """Run the steps (starting the instance first unless the first step starts it or the case
    starts nothing by itself); a step whose engine call raises ends the run in error."""
    checks: dict[str, tuple[Any, Any]] = {}
    if run.scenario.auto_start and not (steps and isinstance(steps[0].action, Start)):
        _step(run, checks, 0, "start (before the first step)", partial(act, run, Start()))
    for number, step in enumerate(steps, start=1):
        name = f"step {number}: {step.text}"
        if run.error is not None:
            checks[name] = ("run", f"not run: step {run.error.number} raised")
            continue
        _step(run, checks, number, step.text, partial(act, run, step.action))
        for note in step.notes:
            if (outcome := annotated(run, step, note)) is not None:
                checks[f"{name} [{type(note).__name__}]"] = outcome
    return checks


def _step(
    run: Run, checks: dict[str, tuple[Any, Any]], number: int, text: str, do: Callable[[], Outcome]
) -> None:
    name = f"step {number}: {text}"
    try:
        outcome = do()
    except MissingOperation as exc:
        raise MissingOperation(f"{run.scenario.id}, {name}: {exc}") from None
    except BpmError as exc:
        run.error = StepError(number, text, exc)
        raised = f"{type(exc).__name__}: {exc}"
        outcome = None if expects_error(run) else ("no error", raised)
    if outcome is not None:
        checks[name] = outcome


def act(run: Run, action: Action) -> Outcome:
    """Do what the step says; returns (expected, actual) when what it checks disagrees."""
    match action:
        case Start(business_key=key, data=data):
            run.start(key)
            return None if data is None else _start_data(run, data)
        case StartProcess(process=process):
            run.start_process(process)
        case Complete(target=target, variables=variables):
            problem = run.complete(run.node(target), variables)
            return None if problem is None else ("completed", problem)
        case Correlate(message=message):
            run.correlate(message)
        case Broadcast(signal=signal):
            run.broadcast(signal)
        case SetVariables(process=process, values=values):
            run.set_variables(process, values)
        case RunDue():
            run.run_due()
        case PassTime(amount=amount, from_start=from_start, fire=fire):
            base = run.started_at if from_start else run.rt.clock.now()
            assert base is not None, "no start to count from"
            run.pass_time(base + amount, fire=fire)
        case FireTimer(node=node):
            fired = run.fire_timer()
            if fired is None:
                return ("a scheduled timer", "none")
            return None if node is None or run.node(node) == fired else (run.node(node), fired)
        case Prose():
            pass
        case _:
            return expect(run, action)
    return None


def _start_data(run: Run, data: dict[str, Any]) -> Outcome:
    """What a Spiff step sets on the start task are the scenario's inputs (a value that is no
    literal, like ``now+0.01s``, is the clock-relative input the manifest describes)."""
    inputs = run.scenario.inputs
    agree = data.keys() == inputs.keys() and all(
        isinstance(value, Raw) or same(value, inputs[key]) for key, value in data.items()
    )
    shown = {k: v.text if isinstance(v, Raw) else v for k, v in data.items()}
    return None if agree else (shown, inputs)


def expect(run: Run, action: Action) -> Outcome:
    match action:
        case ExpectActive(nodes=nodes):
            return _agree(sorted(run.node(n) for n in nodes), run.active())
        case ExpectOpen(count=count):
            return _agree(count, len(run.active()))
        case ExpectEnded():
            return _ended(run)
        case ExpectNotReady(node=node):
            label, done = run.node(node), run.completion_log()
            if label in done or label in run.active():
                return ("not ready", "completed" if label in done else "active")
            return None
        case ExpectJobs(count=count, timers_only=timers_only):
            query = JobQuery(kinds=[JobKind.TIMER]) if timers_only else JobQuery()
            # Camunda's timer start events are jobs too: bpm lists them as scheduled starts.
            starts = len(run.rt.engine.scheduled_starts())
            return _agree(count, run.rt.engine.count_jobs(query) + starts)
        case ExpectIncident(node=node):
            return _agree([run.node(node)], run.incidents())
        case ExpectEndActivity(node=node):
            ends = [n for n in run.completion_log() if run.model.type(n) == "endEvent"]
            return None if ends[-1:] == [run.node(node)] else (run.node(node), ends)
        case ExpectInstances(node=node, count=count):
            return _agree(count, run.count(run.node(node)))
        case ExpectInstanceVariable(node=node, name=name, value=value):
            label = run.node(node)
            tokens = sorted({t for t, at in run.waits().items() if at == label})
            if len(tokens) != 1:
                return (f"one active instance of {label}", f"{len(tokens)} active")
            return _agree(value, run.variables_seen(tokens[0]).get(name, ABSENT))
        case ExpectVariables(process=process, values=values):
            held = run.rt.engine.show(run.instance_of(process))["variables"]
            return _agree(values, {name: held.get(name, ABSENT) for name in values})
        case ExpectBusinessKey(process=process, key=key):
            iid = str(run.instance_of(process))
            [found] = [i["business_key"] for i in run.instances() if i["id"] == iid]
            return _agree(key, found)
        case ExpectProcessInstances(process=process, count=count):
            live = [i for i in run.instances() if i["key"] == process and i["ended_at"] is None]
            return _agree(count, len(live))
    raise AssertionError(f"no check for {action}")


def _ended(run: Run) -> Outcome:
    """Every one of the scenario's instances has ended."""
    instances = run.instances()
    if not instances:
        return ("ended", "no instance")
    alive = [i for i in instances if i["state"] not in ENDED]
    if not alive:
        return None
    if len(instances) == 1:
        return ("ended", alive[0]["state"])
    return ("ended", ", ".join(f"{i['key']} {i['state']}" for i in alive))


def annotated(run: Run, step: Step, note: Note) -> Outcome:
    """Whether what an annotation claims holds after the step."""
    match note:
        case NotFired(node=node):
            return (
                ("not fired", "fired") if run.node(node) in left(run.model, run.history()) else None
            )
        case InScopes(scopes=scopes, exact=exact):
            assert isinstance(step.action, ExpectActive)
            chains = [c for n in step.action.nodes for c in run.scopes_of(run.node(n))]
            inside = [c for c in chains if (c == list(scopes) if exact else set(scopes) <= set(c))]
            return None if chains and inside == chains else (list(scopes), chains)
        case Named(name=name):
            assert isinstance(step.action, Complete)
            target = run.model.node(run.node(step.action.target)) or {}
            return _agree(name, target.get("name"))
        case Typed(type=element):
            assert isinstance(step.action, Complete)
            return _agree(element, run.model.type(run.node(step.action.target)))
        case RaisesError():
            failed = any(i["state"] == "FAILED" for i in run.instances())
            return None if failed or run.error is not None else ("error", run.final_state())
        case Comment():
            return None
    raise AssertionError(f"no check for {note}")
