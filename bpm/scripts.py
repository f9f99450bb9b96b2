"""Inline JavaScript in models (script tasks, listeners, conditions), run in a sandbox.

The engine is QuickJS (PyPI ``quickjs``: a 6 MB wheel, about 2 µs for a trivial evaluation,
with its own time and memory limits). V8 through ``mini-racer`` was measured too: an 82 MB
wheel and about 120 µs per evaluation, for speed a model's short scripts never need. QuickJS
as embedded here has no ``require``, no ``std``/``os`` modules, no ``fetch``: a script has no
file, network, process or module access, only the JSON it is given. One context is made per
worker thread and reused (made again only after a script hit a limit); each evaluation runs
in a scope of its own and whatever globals it made are removed afterwards, and the built-in
objects are frozen, so one script cannot leave anything for the next.

The script sees the process variables by name, ``execution`` (and ``task`` in a task
listener) with the methods of :mod:`bpm.juel_methods`: the facts are computed by that
module's own ``execution`` and the writes applied through it, so expressions and scripts
read and write variables one way. ``S(json)`` reads JSON as Spin does. Its last value is the
result (``camunda:resultVariable``, a condition's outcome).

Settings: ``BPM_SCRIPTS`` (``on``; ``off`` refuses scripts at deploy), ``BPM_SCRIPT_TIMEOUT_MS``
(1000) and ``BPM_SCRIPT_MEMORY_MB`` (64) per evaluation.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import quickjs

from bpm.errors import ConfigError
from bpm.juel_methods import (
    EXECUTION_METHODS,
    EXECUTION_READS,
    EXECUTION_WRITES,
    TASK_CHANGES,
    TASK_READS,
    TASK_WRITES,
    ExecutionView,
    Invocation,
    MethodError,
)
from bpm.task_view import TaskFacts, TaskView

SCRIPTS_SETTING = "BPM_SCRIPTS"
TIMEOUT_SETTING = "BPM_SCRIPT_TIMEOUT_MS"
MEMORY_SETTING = "BPM_SCRIPT_MEMORY_MB"
#: The longest result a script may hand back (its JSON text).
MAX_RESULT = 1_000_000

_PRELUDE = r"""
(function () {
  const g = globalThis;
  function spin(value) {
    const node = { __bpm_spin: true, value: value };
    node.prop = (k) => { if (value === null || typeof value !== 'object' || !(k in value))
      throw new Error("the JSON node has no property '" + k + "'"); return spin(value[k]); };
    node.hasProp = (k) => value !== null && typeof value === 'object' && k in value;
    node.elements = () => { if (!Array.isArray(value)) throw new Error('not an array');
      return value.map(spin); };
    node.stringValue = () => String(value);
    node.numberValue = () => Number(value);
    node.boolValue = () => Boolean(value);
    node.isNull = () => value === null;
    node.toString = () => JSON.stringify(value);
    return node;
  }
  function S(source) {
    if (source && source.__bpm_spin) return source;
    if (typeof source === 'string') {
      if (source.trim().startsWith('<'))
        throw new Error("S() of XML is not supported in scripts (JUEL's S() reads XML)");
      return spin(JSON.parse(source));
    }
    return spin(source === undefined ? null : source);
  }
  function view(input, writes, names) {
    const out = {};
    const facts = input.facts;
    for (const name of names) {
      if (name in facts) { out[name] = () => facts[name]; continue; }
      if (name === 'getVariable' || name === 'getVariableLocal')
        out[name] = (n) => (n in writes ? writes[n]
          : (n in input.variables ? input.variables[n] : null));
      else if (name === 'hasVariable' || name === 'hasVariableLocal')
        out[name] = (n) => (n in writes ? writes[n] !== null : n in input.variables);
      else if (name === 'getVariables')
        out[name] = () => Object.assign({}, input.variables, writes);
      else if (name === 'setVariable' || name === 'setVariableLocal')
        out[name] = (n, v) => { writes[String(n)] = v === undefined ? null : v; };
      else if (name === 'removeVariable' || name === 'removeVariableLocal')
        out[name] = (n) => { writes[String(n)] = null; };
    }
    return Object.freeze(out);
  }
  function taskView(input, writes, calls) {
    const f = Object.assign({}, input.taskFacts);
    const out = Object.assign({}, view(input, writes, input.task));
    for (const name of Object.keys(f)) out[name] = () => f[name];
    const names = (k) => (f[k] || []);
    const links = () => names('getCandidateUsers').map((u) => ({ type: 'candidate', userId: u,
      groupId: null })).concat(names('getCandidateGroups').map((g) => ({ type: 'candidate',
      userId: null, groupId: g })));
    out.getCandidates = links;
    const add = (k, n) => names(k).filter((x) => x !== n).concat([n]);
    const edits = {
      setAssignee: (v) => { f.getAssignee = v; }, setPriority: (v) => { f.getPriority = v; },
      setDueDate: (v) => { f.getDueDate = v; }, setFollowUpDate: (v) => { f.getFollowUpDate = v; },
      addCandidateUser: (n) => { f.getCandidateUsers = add('getCandidateUsers', n); },
      addCandidateGroup: (n) => { f.getCandidateGroups = add('getCandidateGroups', n); },
      addCandidateUsers: (l) => { for (const n of l) edits.addCandidateUser(n); },
      addCandidateGroups: (l) => { for (const n of l) edits.addCandidateGroup(n); },
      deleteCandidateUser: (n) => {
        f.getCandidateUsers = names('getCandidateUsers').filter((x) => x !== n); },
      deleteCandidateGroup: (n) => {
        f.getCandidateGroups = names('getCandidateGroups').filter((x) => x !== n); },
    };
    for (const name of input.taskChanges)
      out[name] = (...args) => { calls.push([name, args]); try { edits[name](...args); }
        catch (e) { /* refused when replayed */ } };
    return Object.freeze(out);
  }
  function plain(key, value) { return value && value.__bpm_spin ? value.value : value; }
  const baseline = new Set(Object.getOwnPropertyNames(g));
  const run = function (input, source) {
    const writes = {};
    const calls = [];
    const scope = Object.assign(Object.create(null), input.variables);
    scope.execution = view(input, writes, input.execution);
    if (input.task) scope.task = taskView(input, writes, calls);
    scope.S = S;
    let value;
    try {
      value = (function () { with (scope) { return eval(source); } })();
    } finally {
      for (const name of Object.getOwnPropertyNames(g))
        if (!baseline.has(name)) delete g[name];
    }
    return JSON.stringify({ value: value === undefined ? null : value, writes: writes,
      calls: calls }, plain);
  };
  for (const name of Object.getOwnPropertyNames(g)) {
    const value = g[name];
    const kind = typeof value;
    if (value !== g && value !== null && (kind === 'object' || kind === 'function')) {
      Object.freeze(value);
      if (value.prototype) Object.freeze(value.prototype);
    }
    Object.defineProperty(g, name, { writable: false, configurable: false });
  }
  Object.defineProperty(g, '__bpm_run', { value: run, writable: false, configurable: false });
  baseline.add('__bpm_run');
})();
"""


class ScriptFailed(Exception):
    """A script threw, ran out of time or memory, or gave what is not JSON; the message names
    the script (its element) so the incident does."""


def scripts_enabled() -> bool:
    """Whether this installation runs scripts (``BPM_SCRIPTS=off``: a model with code in it
    is refused at deploy)."""
    value = os.environ.get(SCRIPTS_SETTING, "on").strip().lower()
    if value not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"{SCRIPTS_SETTING} must be on or off, not {value!r}")
    return value in ("on", "true", "1", "yes")


def _limit(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default)).strip()
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"{name} must be a positive whole number, not {raw!r}")
    return int(raw)


class _Sandbox(threading.local):
    """The QuickJS context of this thread, made on first use."""

    context: quickjs.Context | None = None


_SANDBOX = _Sandbox()


def _context() -> quickjs.Context:
    context = _SANDBOX.context
    if context is None:
        context = quickjs.Context()
        context.set_memory_limit(_limit(MEMORY_SETTING, 64) * 1024 * 1024)
        context.set_max_stack_size(512 * 1024)
        context.eval(_PRELUDE)
        _SANDBOX.context = context
    context.set_time_limit(_limit(TIMEOUT_SETTING, 1000) / 1000)
    return context


def run_script(source: str, where: str, variables: dict[str, Any], invocation: Invocation) -> Any:
    """Run ``source`` over ``variables``; its writes go to ``invocation.execution`` and its
    last value is returned. Every failure is a :class:`ScriptFailed` naming ``where``."""
    if not scripts_enabled():
        raise ScriptFailed(f"{where}: this installation runs no scripts ({SCRIPTS_SETTING}=off)")
    execution = invocation.execution
    names = EXECUTION_READS | (EXECUTION_WRITES if execution.writable else frozenset())
    given: dict[str, Any] = {
        "variables": execution.everything() if variables is None else {**variables},
        "facts": _facts(execution, names),
        "execution": sorted(names),
    }
    task = invocation.task
    if task is not None and not isinstance(task, TaskView):  # no user task known: reads only
        refusal = TaskFacts(event=task.facts.event, refusal="no user task is known here")
        task = TaskView(task.variables, task.facts, refusal, task.writes)
    if isinstance(task, TaskView):
        given["task"] = sorted(TASK_READS | TASK_WRITES)
        given["taskChanges"] = sorted(TASK_CHANGES)
        given["taskFacts"] = task.facts_for_scripts()
    call = f"__bpm_run({json.dumps(given)}, {json.dumps(source)})"
    try:
        out = _context().eval(call)
    except quickjs.JSException as exc:
        reason = str(exc).strip().splitlines()[0]
        if "interrupted" in reason or "out of memory" in reason or "stack" in reason:
            _SANDBOX.context = None  # a context that hit a limit is not used again
            reason = _limit_reason(reason)
        raise ScriptFailed(f"{where}: javascript script failed: {reason}") from None
    if not isinstance(out, str) or len(out) > MAX_RESULT:
        raise ScriptFailed(f"{where}: javascript script gave a result over {MAX_RESULT} bytes")
    result = json.loads(out)
    if isinstance(task, TaskView):
        _replay(task, result["calls"], where)
    if execution.writable:
        for name, value in result["writes"].items():
            execution.set(name, value)
    return result["value"]


def _replay(task: TaskView, calls: list[list[Any]], where: str) -> None:
    """The script's task setters, made again on the one ``task`` (which checks them and
    records the edits): scripts and expressions change a task one way."""
    for method, args in calls:
        try:
            task.call(method, args, TASK_CHANGES)
        except MethodError as exc:
            raise ScriptFailed(f"{where}: javascript script failed: {exc}") from None


def _limit_reason(reason: str) -> str:
    if "interrupted" in reason:
        return f"it ran longer than {_limit(TIMEOUT_SETTING, 1000)} ms ({TIMEOUT_SETTING})"
    if "memory" in reason:
        return f"it used more than {_limit(MEMORY_SETTING, 64)} MB ({MEMORY_SETTING})"
    return f"it recursed too deep ({reason})"


def _facts(execution: ExecutionView, names: frozenset[str]) -> dict[str, Any]:
    """The values of the methods that take no argument, computed by the one ``execution``."""
    out: dict[str, Any] = {}
    for name in names:
        if name.startswith("get") and name not in ("getVariable", "getVariableLocal"):
            if name == "getVariables":
                continue
            try:
                out[name] = EXECUTION_METHODS[name](execution)
            except MethodError:
                out[name] = None
    return out
