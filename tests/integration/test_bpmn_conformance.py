"""BPMN conformance: every model of the shared corpus is deployed, then driven and compared.

The corpus is ``../shared/conformance/`` beside the repository; its README defines the step
language and the fields. Both manifests run: ``manifest.json`` (a scenario's id is its case's
id) and ``manifest-scopes-and-events.json`` (ids prefixed ``scopes-and-events:``). For each
case the importer either compiles its model, its ``called_models`` and its
``companion_models`` (each checked against its ``sha256`` and for the process it names) and
the engine deploys them all in one deployment, or refuses one with ``InvalidDefinition``: the
scenario is then skipped with the verdict ``rejected at deploy: <the importer's message>``.
``manifest.json``'s refusals are pinned in ``differences.OUTCOMES`` (a model listed there
that compiles fails); the other manifest's are read at run time, so its cases run as soon as
the engine learns their features. Each deployed case runs once per scenario (the manifest's
``harness`` and each ``additional_scenarios`` entry) and what the engine did is compared with
what the peer engine's own test asserts. The harness is the package
``tests/integration/conformance``.

**Fields.** Each field is read, or listed in ``corpus.DESCRIPTIVE`` (provenance, commentary);
any other field, and any unknown field of ``failing_tasks``, ``expected_error`` or a called or
companion model, fails the scenario. ``final_state_asserted: false`` leaves the final state
unchecked; ``auto_start: false``: the harness starts nothing, the steps make the instances.

**Names and instances.** ``X`` is an activity of the case's ``process_id``, ``P/X`` one of
process ``P`` deployed with it; a step may name an activity by its quoted name
(``activity_names``). The scenario's instances are every instance in the test's own
database: the one ``start`` started, those it called, those ``start_process`` started and
those start events made. The completion log, the wait states, the timers and the incidents
cover them all; the first instance is the one ``start`` started, else the oldest.

**Driving.** ``steps.parse`` understands each form the corpus uses and fails on any other,
so a new step is never skipped silently. Unless the first step starts it or the case has
``auto_start: false``, the instance is started before the first step. A step whose engine
call raises a ``bpm`` error ends the run in error there (the corpus's final state ``error``):
that fails the scenario unless it expects an error, and later steps are reported not run. A
step whose engine operation does not exist yet fails the scenario, naming the operation.

- ``start`` (``start with inputs``, ``execute``, ``execute again``, ``run definition``): start
  an instance of ``process_id`` with the scenario's inputs and run its jobs; ``start with
  business key KEY`` gives it that business key; ``set data {…} on the start task`` (Spiff)
  starts it and checks the data is the inputs. ``start_process P``: an instance of ``P``.
- ``complete X`` / ``signal X``, optionally ``with {…}`` (``with data {…}``): finish the wait
  state at ``X``, writing the object's entries first as the engine writes a task's variables
  (the nearest scope that has the name, else the instance): its open user task, its external
  task, or the message its receive task or message event waits for, to that token's
  instance. With several open, the one created first, lowest ``loopCounter`` first. A plain
  ``task`` is a pass-through here: completing it checks that it completed and that the data
  it would set is what the instance holds (see ``DIFFERENCES``).
- ``correlate MESSAGE``: one message, no payload, to the first live instance with a
  subscription waiting for it (``Engine.correlate``); with none, to a message start event of a
  deployed process (no engine operation yet: fails saying so); nobody receiving it ends the
  run in error (``NoMatchingWait``). ``broadcast SIGNAL``: the engine has no signal
  broadcast yet, so the scenario fails saying so.
- ``set_variables {…}`` / ``set_variables in P {…}``: ``Engine.set_variables`` on the first
  instance (the live instance of ``P``), then run the jobs.
- ``advance_clock +PT…`` / ``advance_clock to start+PT…`` (from the start, or from deploy time
  when nothing was started) / ``do not signal; PT… timer fires``: move the fake clock, fire
  the due timers once and run the jobs. ``sleep N s``: move the clock only (Spiff fires
  nothing until ``refresh_timers``). ``fire timer job`` / ``fire timer job (X)``: move the
  clock to the first timer due (which is at ``X``) and fire it. ``run due jobs``, ``run engine
  steps``, ``refresh_timers``, ``wait for 'end'`` (bpmn-engine's end event: the run goes as
  far as it can), ``execute available jobs …``: fire the due timers, run the jobs. No other
  step fires a timer.
- ``expect_active [...]`` (``expect activity tree [...]``, ``expect X postponed``, ``expect no
  READY/WAITING tasks``): the set of wait states; ``expect N WAITING`` / ``expect N READY
  tasks``: how many; ``expect_ended``: every instance has ended (``COMPLETED``,
  ``TERMINATED`` or ``CANCELLED``); ``expect_not_ready X``: neither completed nor active;
  ``expect N timer jobs`` / ``expect N jobs``: ``Engine.count_jobs`` of the scheduled timers /
  of the timers and open handler tasks; ``expect one incident … on X``: the open incidents'
  activities; ``historic end activity == X``: the last end event in the log;
  ``expect_instances X N``: the active instances of ``X`` (its tokens and open tasks, not a
  multi-instance body's token); ``expect_instance_variable X NAME == VALUE``: the one active
  instance of ``X`` sees ``VALUE`` (its user task's variables, else its tokens' local
  variables over the instance's); ``expect_variables [in P] {…}``: the variables of the first
  instance (of ``P``'s live instance, else its last); ``expect_business_key P KEY``: that
  instance's business key; ``expect_process_instances P N``: live instances of ``P``. Values
  compare as JSON (``true`` is not ``1``).
- Annotations: ``(J must not fire)``: no token has left ``J``; ``inside S`` / ``(scopes A >
  B)``: the listed activity runs in those scopes; ``('Name')``: the activity's name;
  ``(receiveTask)``: its element; ``-> raises …``: the run is in error after the step. The
  rest are commentary, each in ``annotations.COMMENTS`` with why; ``steps.PROSE_STEPS`` lists whole
  steps that say nothing this engine can check.

**Wait states** (``Run.waits``): live tokens (``ACTIVE``, ``WAITING``) except a scope's
(subprocess, call activity, transaction, multi-instance body), a gateway's or a start
event's, and open tasks; a compensation token is named by its handler.

**Handlers.** Every handler name a model uses (``camunda:class`` / ``camunda:expression``
mapped as in docs/bpmn.md) gets a recorder. The activity the scenario's ``failing_tasks``
names (``X`` or ``P/X``) raises: ``exception`` -> ``RuntimeError(message)`` (every attempt),
``bpmn_error`` -> ``bpm.BpmnError(errorCode, message)``.

**The completion log** (``logs.completion_log``) is one log over the scenario's instances, in
history order, and follows the corpus's notion of a completed activity:

- an activity (task, subprocess, call activity, intermediate or boundary event) completes
  when a token leaves it: a token ``MOVED``/``FORKED`` event whose ``data.from`` names it, or
  a token ``COMPLETED`` at it (an activity without outgoing flows: an implicit end);
- an end event completes when its token ``COMPLETED`` at it (a compensation end event also
  when its token leaves it once the compensation is done);
- a compensation handler completes when its compensation token is ``COMPENSATED`` (the token
  sits at the compensated activity; ``CompensationTokenCreated`` names the handler); the
  compensation log (``logs.compensation_log``) lists handlers in the order they started;
- start events and gateways are left out (the peers' logs leave them out);
- a token ``CANCELLED`` at a node (a boundary interrupted it, a terminate end event ended it)
  is not a completion.

**Final state.** ``error`` when a step's call raised or any instance is ``FAILED`` (the run
ended in error; the engine keeps an open incident on the failed token so an operator can retry
it); else ``waiting`` while any instance is ``RUNNING``; else the first instance's:
``COMPLETED`` -> ``completed``, ``TERMINATED`` -> ``terminated``. ``expected_error``: ``at`` is
the activity of the first open incident (or the failed step's element), ``kind`` the corpus's
wording mapped to this engine's incident kind (``checks.ERROR_KINDS``), ``message_contains``
a text the message contains (case aside).

**Differences.** Where this engine deliberately differs from the peer,
``differences.DIFFERENCES`` names the check, pins what this engine does instead and says why;
docs/bpmn.md ("Differences from other engines") explains each. A documented difference whose
check starts to agree with the peer fails the test too, so the list stays true.
"""

from __future__ import annotations

from typing import Any

import pytest

from bpm.handlers import HandlerRegistry
from tests.helpers.runtime import Harness
from tests.helpers.shared import MISSING
from tests.integration.conformance import corpus
from tests.integration.conformance.checks import problems, verdict
from tests.integration.conformance.corpus import Manifest, Scenario
from tests.integration.conformance.deployment import (
    Compiled,
    Refusal,
    compile_case,
    deploy_each,
    refused,
)
from tests.integration.conformance.runner import run_scenario
from tests.integration.conformance.steps import parse

#: The key under which each scenario's (id, outcome) is recorded on its test report ("passed",
#: "documented difference (…)" or "rejected at deploy: …"); tests/conftest.py prints them all
#: after the run, from whichever worker process ran them.
CONFORMANCE_PROPERTY = "bpmn-conformance"


def _absent(manifest: Manifest) -> Any:
    reason = MISSING if not manifest.path.parent.is_dir() else f"{manifest.path} is not there"
    return pytest.param(None, id=f"{manifest.name} absent", marks=pytest.mark.skip(reason=reason))


def _cases() -> list[Any]:
    found = [pytest.param((m, c), id=m.case_id(c)) for m, c in corpus.cases()]
    return found + [_absent(m) for m in corpus.missing()]


def _scenarios() -> list[Any]:
    found = [pytest.param(s, id=s.id) for s in corpus.scenarios()]
    return found + [_absent(m) for m in corpus.missing()]


@pytest.mark.parametrize("case", _cases())
def test_model_is_imported_and_deployed_or_clearly_rejected(
    rt: Harness, case: tuple[Manifest, dict[str, Any]]
) -> None:
    manifest, found = case
    compiled = compile_case(found)
    if refused(manifest, found, compiled) is not None:
        assert isinstance(compiled, Refusal) and "line " in compiled.message, compiled
        return
    assert isinstance(compiled, Compiled)
    deploy_each(rt, compiled)


@pytest.mark.parametrize("scenario", _scenarios())
def test_model_runs_as_the_peer_test_asserts(
    rt: Harness, handlers: HandlerRegistry, scenario: Scenario, request: pytest.FixtureRequest
) -> None:
    assert not scenario.problems, f"{scenario.id}:\n  " + "\n  ".join(scenario.problems)
    for text in scenario.harness:
        parse(text)  # a step the harness does not understand fails even a refused case
    compiled = compile_case(scenario.case)
    rejected = refused(scenario.manifest, scenario.case, compiled)
    if rejected is not None:
        request.node.user_properties.append((CONFORMANCE_PROPERTY, (scenario.id, rejected)))
        pytest.skip(rejected)
    assert isinstance(compiled, Compiled)
    found = problems(scenario.id, run_scenario(rt, handlers, scenario, compiled))
    assert not found, f"{scenario.id}:\n  " + "\n  ".join(found)
    outcome = verdict(scenario.id)
    request.node.user_properties.append((CONFORMANCE_PROPERTY, (scenario.id, outcome)))
