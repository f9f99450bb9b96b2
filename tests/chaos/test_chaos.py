"""Chaos: the project's real processes under faults; nothing may be lost or done twice.

Two Celery workers, beat and a ``bpm external-worker`` run a process with handler steps, a
fork and join, an exclusive gateway, a timer, an external task and a global saga, while
starts keep arriving and the test crashes PostgreSQL, restarts Redis, kills workers and
cuts the network to the database. Then every instance must have ended as its variables say,
once, each side effect done once per attempt (a repeat only where a fault explains it), each
compensation once and in reverse order, with no incident left and history that replays to
the tables. docs/chaos.md describes the run, the long form and its settings.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from tests.chaos import checks
from tests.chaos.conftest import ROOT, ChaosRun
from tests.chaos.faults import Planned, bounded_plan, kinds_from, random_plan
from tests.chaos.process import Order, definition, orders
from tests.chaos.sender import Sender
from tests.chaos.services import missing_binaries

_MISSING = missing_binaries()
if _MISSING is not None:
    pytest.skip(_MISSING, allow_module_level=True)


@dataclass(frozen=True)
class Plan:
    """How big the run is and which faults it meets (docs/chaos.md lists the variables)."""

    long: bool
    instances: int
    spread: float  # seconds over which the starts are sent
    faults: list[Planned] = field(default_factory=list)
    #: Seconds after the test began by which every instance must have ended (the waits
    #: give up then, leaving time for the checks within pytest's timeout).
    end_by: float = 200.0
    max_attempts: int = 5
    seed: int = 0

    @property
    def timeout(self) -> int:
        """pytest-timeout's limit: the run's own bounded waits end well before it."""
        return 300 if not self.long else int(self.end_by + 300)

    def describe(self) -> str:
        return (
            f"{'long' if self.long else 'bounded'} form: {self.instances} instances sent "
            f"over {self.spread:.0f} s, {len(self.faults)} faults, seed {self.seed}, "
            f"max_attempts {self.max_attempts}"
        )


def plan_from_env() -> Plan:
    long = os.environ.get("BPM_CHAOS_LONG") == "1"
    kinds = kinds_from(os.environ.get("BPM_CHAOS_FAULTS"))
    if not long:
        return Plan(
            False,
            int(os.environ.get("BPM_CHAOS_INSTANCES") or 150),
            60.0,
            bounded_plan(kinds),
            end_by=200.0,
            max_attempts=5,
            seed=int(os.environ.get("BPM_CHAOS_SEED") or 0),
        )
    seed = int(os.environ.get("BPM_CHAOS_SEED") or random.SystemRandom().randrange(10**6))
    duration = float(os.environ.get("BPM_CHAOS_DURATION") or 900)
    count = int(os.environ.get("BPM_CHAOS_INSTANCES") or round(duration * 1.5))
    return Plan(
        True,
        count,
        duration,
        random_plan(random.Random(seed), duration, kinds),
        end_by=duration + float(os.environ.get("BPM_CHAOS_DRAIN") or 600),
        max_attempts=8,
        seed=seed,
    )


PLAN = plan_from_env()


@pytest.mark.slow
@pytest.mark.timeout(PLAN.timeout)
def test_nothing_is_lost_or_done_twice_under_faults(chaos: ChaosRun) -> None:
    plan, cluster, faults = PLAN, chaos.cluster, chaos.faults
    began = time.monotonic()
    Engine(chaos.db, InProcessDispatcher()).deploy(definition(plan.max_attempts))
    started = [cluster.worker(), cluster.worker(), cluster.beat(), cluster.ext()]
    cluster.wait_ready(started)
    cluster.watch()
    todo = orders(plan.instances)
    sender = Sender(chaos.services.redis.url, cluster.prefix, todo, plan.spread)
    rng = random.Random(plan.seed)
    faults.on_broker_back = lambda: sender.resend_unconfirmed(
        {i.business_key for i in checks.instances_of(chaos.db)}
    )
    t0 = sender.start()
    try:
        for planned in plan.faults:
            time.sleep(max(0.0, t0 + planned.at - time.time()))
            faults.inject(planned, rng)
        sender.close(timeout=plan.spread + 150)
    finally:
        sender.stop()
    chaos.db.dispose()  # its pooled connections died with the PostgreSQL crash
    why = drain(chaos, todo, deadline=began + plan.end_by)
    drained = time.monotonic()
    cluster.stop()  # nothing moves while the checks read: a still running instance would race

    findings = run_checks(chaos, plan, todo, sender)
    report = "\n".join(
        [
            plan.describe(),
            f"waited for the instances: {why}; sent in {sender.finished_at - t0:.0f} s, drained "
            f"{drained - began:.0f} s after the start, checked in {time.monotonic() - drained:.0f}"
            " s",
            findings.render(),
            "notes:",
            *(f"  {n}" for n in findings.notes),
            "faults (seconds after the first start):",
            faults.timeline(t0),
            f"logs (and on failure database.sql): {chaos.logs}",
        ]
    )
    (chaos.logs / "report.txt").write_text(report + "\n")
    if findings.failed:
        chaos.services.pg.dump(chaos.database, chaos.logs / "database.sql")
    print(report)  # shown with -s, and kept in the captured output of a failure
    assert not findings.failed, (
        f"chaos run failed {findings.failed}\n{report}\n\nlog tails:\n{cluster.tails()}"
    )


# --- waiting ------------------------------------------------------------------------------


def drain(chaos: ChaosRun, todo: Sequence[Order], deadline: float) -> str:
    """Wait until every sent start has an instance and every instance has ended, or until
    waiting longer cannot help: every instance that exists has ended, yet some starts have
    none and no start message is left in the broker (they are lost); or nothing at all has
    happened for 45 s; or the deadline. Returns which."""
    wanted = {o.business_key for o in todo}
    quiet_since: float | None = None
    progress, progress_at = -1, time.monotonic()
    while True:
        found = checks.instances_of(chaos.db)
        ended = all(i.state in checks.ENDED for i in found)
        keys = {i.business_key for i in found}
        if ended and wanted <= keys:
            return "every instance ended"
        pending = pending_starts(chaos)
        now = time.monotonic()
        if ended and pending == 0:
            quiet_since = quiet_since or now
            if now - quiet_since > 10:
                return (
                    f"{len(wanted - keys)} start(s) without an instance and none left in the broker"
                )
        else:
            quiet_since = None
        latest = last_history_id(chaos)
        if latest != progress:
            progress, progress_at = latest, now
        elif now - progress_at > 45 and pending == 0:
            return "nothing happened for 45 s"
        if now > deadline:
            return "the drain deadline passed"
        time.sleep(1)


def pending_starts(chaos: ChaosRun) -> int:
    """Start messages of this test still queued in Redis, or delivered and not yet
    acknowledged (a worker runs them, or died holding them)."""
    client = chaos.services.redis.client()
    prefix = chaos.cluster.prefix
    try:
        queued = sum(int(client.llen(k)) for k in client.keys(f"{prefix}bpm.starts*"))
        held = 0
        for raw in client.hvals("unacked"):
            message, _exchange, routing_key = json.loads(raw)
            if (
                str(routing_key).startswith(prefix)
                and message.get("headers", {}).get("task") == "bpm.start_instance"
            ):
                held += 1
        return queued + held
    finally:
        client.close()


def last_history_id(chaos: ChaosRun) -> int:
    with chaos.db.transaction() as conn:
        value = conn.exec_driver_sql(
            "SELECT greatest((SELECT max(id) FROM token_events), (SELECT max(id) FROM "
            "task_events), (SELECT max(id) FROM engine_events))"
        ).scalar()
    return int(value or 0)


# --- checking -----------------------------------------------------------------------------


def run_checks(
    chaos: ChaosRun, plan: Plan, todo: Sequence[Order], sender: Sender
) -> checks.Findings:
    cluster, faults = chaos.cluster, chaos.faults
    findings = checks.Findings()
    found = checks.instances_of(chaos.db)
    effects = checks.read_ledger(chaos.ledger)
    lost, doubled = checks.check_instances(todo, found, effects, start_trail(chaos, sender))
    findings.add("every sent start has an instance", lost)
    findings.add("no business key has two instances", doubled)
    findings.add("every instance ended as expected", checks.check_end_states(todo, found))
    findings.add("instances that have not ended", checks.describe_stuck(chaos.db, found))
    problems, notes = checks.check_side_effects(
        todo, found, effects, plan.max_attempts, faults.windows, cluster.killed
    )
    findings.add("side effects: once per attempt, within max_attempts, repeats explained", problems)
    findings.notes += notes
    findings.add(
        "compensations: each once, latest success first",
        checks.check_compensations(todo, found, effects, checks.records_of(chaos.db)),
    )
    findings.add("no open incidents", checks.open_incidents(chaos.db))
    findings.add(
        "nothing left live in ended instances; one timer each, fired once",
        checks.leftovers(chaos.db),
    )
    findings.add("runtime rows agree with history", checks.history(chaos.db, found))
    findings.add("bpm replay --check --all", replay_all(chaos, found))
    # Not a failure: every deployment in deploy/ restarts a process that exits (systemd's
    # Restart=always, compose's restart policy), and the supervisor here does the same; what
    # the exits cost shows in the other checks. The report names them and why.
    findings.notes += [
        f"{e.name} exited on its own (exit {e.returncode}) at +{e.at - sender.started_at:.1f}"
        f" s, restarted: {exit_reason(e.tail)}"
        for e in cluster.exits
    ]
    findings.notes.append(
        f"{len(effects)} side effects in the ledger; instances by state: "
        f"{dict(Counter(i.state for i in found))}"
    )
    findings.notes.append(
        f"sends that raised: {sum(sender.errors.values())} for {len(sender.errors)} business"
        f" key(s) (last: {sender.last_errors}); given up: {sender.unsent}; starts sent again"
        f" after a broker restart: {sum(sender.resent.values())}"
    )
    findings.notes += job_outcomes(chaos)
    return findings


def replay_all(chaos: ChaosRun, found: Sequence[checks.Instance]) -> list[str]:
    """``bpm replay --check --all`` as an operator runs it, straight against PostgreSQL."""
    env = {k: v for k, v in chaos.cluster.env.items() if k != "BPM_BROKER_URL"}
    env["BPM_DATABASE_URL"] = chaos.direct_url
    done = subprocess.run(
        [sys.executable, "-m", "bpm.cli.main", "replay", "--check", "--all", "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    try:
        summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        return [f"exit {done.returncode}, no JSON: {done.stdout[-2000:]} {done.stderr[-2000:]}"]
    names = {str(i.id): i.business_key for i in found}
    out = []
    if summary.get("checked") != len(found):
        out.append(f"checked {summary.get('checked')} instances, {len(found)} exist")
    for iid, lines in summary.get("differences", {}).items():
        out.append(f"{names.get(iid, iid)}: {'; '.join(lines[:3])}")
    if done.returncode != 0 and not out:
        out.append(f"exit {done.returncode}: {done.stderr[-2000:]}")
    return out


RETURNED = re.compile(r"'outcome': '([^']*)'")
SCAN_FOUND = re.compile(
    r"stalled_tokens=(?P<stalled_tokens>\d+) ready_tasks=(?P<ready_tasks>\d+) "
    r"waiting_parents=(?P<waiting_parents>\d+)"
)
JOB_LINE = re.compile(r"job=(\S+) .*?outcome=(\w+)")
START_LINE = re.compile(
    r"^\[(?P<at>[^\]]+?),\d+: [^\]]*\] Task bpm\.start_instance\[(?P<id>[0-9a-f-]+)\]"
    r" (?P<what>.*)$"
)


def start_trail(chaos: ChaosRun, sender: Sender) -> Callable[[str], str]:
    """What became of a business key's start messages, from the workers' logs: which
    worker received each, and what the job returned (nothing, if it died first)."""
    seen: dict[str, list[str]] = defaultdict(list)
    for name, proc in chaos.cluster.procs.items():
        if proc.role != "worker":
            continue
        at = chaos.cluster.killed.get(proc.pgid)
        killed = f" (killed at {time.strftime('%H:%M:%S', time.localtime(at))})" if at else ""
        for line in chaos.cluster.log_text(name).splitlines():
            m = START_LINE.match(line)
            if m:
                what = m.group("what")
                if what != "received":  # "succeeded in 0.01s: <what the job returned>"
                    result = what.split(": ", 1)[-1]
                    outcome = RETURNED.search(result)
                    what = outcome.group(1) if outcome else result[:120]
                seen[m.group("id")].append(f"{name}{killed} {m.group('at')[11:]} {what}")

    def trail(business_key: str) -> str:
        parts = [
            f"message {tid[:8]}: "
            + (
                "the send raised"
                if tid in sender.failed_ids
                else ", ".join(seen.get(tid, [])) or "in no worker's log"
            )
            for tid in sender.task_ids.get(business_key, [])
        ]
        return "; ".join(parts) or "never sent"

    return trail


def exit_reason(tail: str) -> str:
    """The line of a dead process's log that says why it died."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    for line in lines:
        if "Unrecoverable error" in line or "error:" in line:
            return line[:200]
    return lines[-1][:200] if lines else "(no output)"


def job_outcomes(chaos: ChaosRun) -> list[str]:
    """How the workers' jobs ended, by job: ``outcome=failed`` lines are work the engine
    handed to the scans, and, for a start, a start that is gone."""
    counts: Counter[tuple[str, str]] = Counter()
    resent: Counter[str] = Counter()
    failed_starts: list[str] = []
    for name, proc in chaos.cluster.procs.items():
        if proc.role != "worker":
            continue
        for line in chaos.cluster.log_text(name).splitlines():
            m = JOB_LINE.search(line)
            if m and " ms=" in line:
                counts[(m.group(1), m.group(2))] += 1
            if "job=bpm.start_instance" in line and "outcome=failed" in line and " ms=" in line:
                failed_starts.append(f"{name}: {line.strip()[:200]}")
            found = SCAN_FOUND.search(line)
            if found and " ms=" in line:
                for key, value in found.groupdict().items():
                    resent[key] += int(value)
    out = [
        "job outcomes: "
        + ", ".join(
            f"{job.removeprefix('bpm.')} {outcome}={n}"
            for (job, outcome), n in sorted(counts.items())
        )
    ]
    out.append(
        "jobs the stalled-work scans sent again: "
        + ", ".join(f"{k}={v}" for k, v in sorted(resent.items()))
        + " (each a job for a row untouched for BPM_STALL_GRACE; stale job outcomes are mostly"
        " these, arriving after the row moved on)"
    )
    if failed_starts:
        out.append(f"start jobs logged outcome=failed ({len(failed_starts)}); first ones:")
        out += [f"    {line}" for line in failed_starts[:5]]
    return out
