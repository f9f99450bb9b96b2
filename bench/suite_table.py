"""The benchmark suite's table: each figure as the median of its rounds with their spread.

Ratios are taken inside each round (both sides ran in the same window, one after the other)
and only then summarised over rounds, so a slow round weighs on both sides of a ratio alike.
A round is a flat mapping of figure keys to numbers; keys name the part that measured them:

- ``engine.<shape>.steps_per_s`` / ``.tx_per_step`` / ``.stmts_per_step``: the engine alone;
- ``bpm.<K>.steps_per_s`` / ``.p50_ms`` / ``.cpu_<role>_ms`` / ``.tx_per_step``: bpm with K
  Celery workers;
- ``chain.<K>.…``: the plain Celery chain on K workers, the same figures but transactions;
- ``one_task.instances_per_s`` / ``.tx_per_instance``: start, one service task, end, with
  workers;
- ``peer.dbos.steps_per_s``: DBOS, when the peer ran.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Round = dict[str, float]

#: The engine-alone shapes: key in a round, label in the table.
ENGINE_SHAPES = (
    ("sequential", "sequential (10 service tasks)"),
    ("fork_join", "fork/join (4 branches + 2)"),
    ("call", "call activity (1 + 5 called + 1)"),
    ("multi_instance", "multi-instance (1 + 10 parallel + 1)"),
)
ROLES = ("worker", "postgres", "redis")


@dataclass(frozen=True)
class Figure:
    """One figure over the rounds: its median and the lowest and highest round."""

    median: float
    low: float
    high: float
    rounds: int


def summarise(values: Sequence[float]) -> Figure:
    """The median and spread of the rounds that measured the figure (NaNs are not measures)."""
    real = [v for v in values if not math.isnan(v)]
    if not real:
        return Figure(math.nan, math.nan, math.nan, 0)
    return Figure(statistics.median(real), min(real), max(real), len(real))


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or math.isnan(a) or math.isnan(b):
        return None
    return a / b


def ratios(one: Mapping[str, float], workers: Sequence[int]) -> Round:
    """The ratios one round's figures give: bpm / chain at each K and at each system's best
    K, fork/join / sequential, bpm's scaling from the first K to the others, bpm / DBOS."""
    found: dict[str, float | None] = {}
    for k in workers:
        found[f"ratio.bpm_chain.{k}"] = _ratio(
            one.get(f"bpm.{k}.steps_per_s"), one.get(f"chain.{k}.steps_per_s")
        )
    bpm_rates = [one[f"bpm.{k}.steps_per_s"] for k in workers if f"bpm.{k}.steps_per_s" in one]
    chain_rates = [
        one[f"chain.{k}.steps_per_s"] for k in workers if f"chain.{k}.steps_per_s" in one
    ]
    if bpm_rates and chain_rates:
        found["ratio.bpm_chain.best"] = _ratio(max(bpm_rates), max(chain_rates))
    found["ratio.fork_join_sequential"] = _ratio(
        one.get("engine.fork_join.steps_per_s"), one.get("engine.sequential.steps_per_s")
    )
    first = workers[0] if workers else None
    for k in workers[1:]:
        found[f"ratio.scaling.{first}_{k}"] = _ratio(
            one.get(f"bpm.{k}.steps_per_s"), one.get(f"bpm.{first}.steps_per_s")
        )
    found["ratio.bpm_dbos"] = _ratio(
        one.get("engine.sequential.steps_per_s"), one.get("peer.dbos.steps_per_s")
    )
    return {key: value for key, value in found.items() if value is not None}


@dataclass(frozen=True)
class Row:
    label: str
    key: str
    unit: str


def rows(workers: Sequence[int]) -> list[Row]:
    """Every row the table can hold, in the order it shows them."""
    out = [
        Row(f"engine alone, {label}", f"engine.{key}.steps_per_s", "steps/s")
        for key, label in ENGINE_SHAPES
    ]
    for k in workers:
        out.append(Row(f"bpm distributed, K={k}", f"bpm.{k}.steps_per_s", "steps/s"))
        out.append(Row(f"plain Celery chain, K={k}", f"chain.{k}.steps_per_s", "steps/s"))
    out.append(Row("one service task, end to end", "one_task.instances_per_s", "instances/s"))
    out.append(Row("DBOS, 10 no-op steps (peer)", "peer.dbos.steps_per_s", "steps/s"))
    out += [Row(f"bpm / chain, K={k}", f"ratio.bpm_chain.{k}", "ratio") for k in workers]
    out.append(Row("bpm / chain, each at its best K", "ratio.bpm_chain.best", "ratio"))
    out.append(Row("fork/join / sequential (engine)", "ratio.fork_join_sequential", "ratio"))
    out += [
        Row(f"bpm scaling K={workers[0]}→{k}", f"ratio.scaling.{workers[0]}_{k}", "ratio")
        for k in workers[1:]
    ]
    out.append(Row("bpm engine sequential / DBOS", "ratio.bpm_dbos", "ratio"))
    for system, label in (("bpm", "bpm"), ("chain", "chain")):
        out += [
            Row(f"{label} step latency p50, K={k}", f"{system}.{k}.p50_ms", "ms") for k in workers
        ]
    for system, label in (("bpm", "bpm"), ("chain", "chain")):
        for k in workers:
            out += [
                Row(f"{label} CPU per step, {role}, K={k}", f"{system}.{k}.cpu_{role}_ms", "ms")
                for role in ROLES
            ]
    out += [Row(f"bpm transactions per step, K={k}", f"bpm.{k}.tx_per_step", "") for k in workers]
    out.append(Row("transactions per instance, one service task", "one_task.tx_per_instance", ""))
    for key, label in ENGINE_SHAPES:
        out.append(Row(f"SQL statements per step, {label}", f"engine.{key}.stmts_per_step", ""))
        out.append(Row(f"transactions per step, {label}", f"engine.{key}.tx_per_step", ""))
    return out


def _number(value: float, unit: str) -> str:
    if math.isnan(value):
        return "n/a"
    if unit == "ratio":
        return f"{value:.2f}x"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}"


def table(rounds: Sequence[Mapping[str, float]], workers: Sequence[int]) -> str:
    """A Markdown table of every figure some round measured: median and min-max over rounds."""
    full = [{**one, **ratios(one, workers)} for one in rounds]
    lines = [
        f"| figure | unit | median of {len(full)} rounds | spread (min-max) |",
        "|---|---|---:|---:|",
    ]
    for row in rows(workers):
        values = [one[row.key] for one in full if row.key in one]
        if not values:
            continue
        fig = summarise(values)
        unit = "x" if row.unit == "ratio" else row.unit
        spread = f"{_number(fig.low, row.unit)} to {_number(fig.high, row.unit)}"
        lines.append(f"| {row.label} | {unit} | {_number(fig.median, row.unit)} | {spread} |")
    return "\n".join(lines)


def machine_lines(machine: Mapping[str, str]) -> Iterable[str]:
    """The machine a table came from, one ``name: value`` line each."""
    return (f"{name}: {value}" for name, value in machine.items())
