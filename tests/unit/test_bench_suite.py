"""The benchmark suite's table on fixed numbers, and its entry point's help: no timing."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.suite import Part, per_step, rotated
from bench.suite_table import ratios, summarise, table

ROOT = Path(__file__).resolve().parents[2]


def _round(scale: float) -> dict[str, float]:
    return {
        "engine.sequential.steps_per_s": 300 * scale,
        "engine.fork_join.steps_per_s": 150 * scale,
        "bpm.1.steps_per_s": 200 * scale,
        "bpm.2.steps_per_s": 300 * scale,
        "chain.1.steps_per_s": 400 * scale,
        "chain.2.steps_per_s": 1000 * scale,
        "peer.dbos.steps_per_s": 100 * scale,
        "bpm.1.cpu_worker_ms": 1.25,
        "one_task.instances_per_s": 50 * scale,
    }


def test_a_figure_is_the_median_of_its_rounds_with_their_spread() -> None:
    fig = summarise([3.0, 1.0, 2.0, math.nan])
    assert (fig.median, fig.low, fig.high, fig.rounds) == (2.0, 1.0, 3.0, 3)


def test_ratios_are_taken_within_a_round() -> None:
    found = ratios(_round(1.0), [1, 2])
    assert found == {
        "ratio.bpm_chain.1": 0.5,
        "ratio.bpm_chain.2": 0.3,
        "ratio.bpm_chain.best": 0.3,
        "ratio.fork_join_sequential": 0.5,
        "ratio.scaling.1_2": 1.5,
        "ratio.bpm_dbos": 3.0,
    }


def test_a_ratio_without_both_sides_is_left_out() -> None:
    assert ratios({"bpm.1.steps_per_s": 10.0}, [1]) == {}


def test_the_table_shows_medians_spreads_and_ratios() -> None:
    text = table([_round(1.0), _round(0.5), _round(2.0)], [1, 2])
    lines = text.splitlines()
    assert lines[0] == "| figure | unit | median of 3 rounds | spread (min-max) |"
    assert "| engine alone, sequential (10 service tasks) | steps/s | 300 | 150 to 600 |" in lines
    assert "| bpm / chain, K=2 | x | 0.30x | 0.30x to 0.30x |" in lines
    assert "| bpm scaling K=1→2 | x | 1.50x | 1.50x to 1.50x |" in lines
    assert "| bpm CPU per step, worker, K=1 | ms | 1.25 | 1.25 to 1.25 |" in lines
    assert "| one service task, end to end | instances/s | 50.00 | 25.00 to 100 |" in lines
    assert not any("K=4" in line for line in lines), "a figure no round measured is left out"


def test_cpu_seconds_become_milliseconds_per_step() -> None:
    figures = per_step({"steps_per_s": 200.0, "cpu_worker_s": 1.5, "cpu_redis_s": 0.1}, 1000)
    assert figures == pytest.approx(
        {"steps_per_s": 200.0, "cpu_worker_ms": 1.5, "cpu_redis_ms": 0.1}
    )


def test_each_round_starts_one_part_further_on() -> None:
    parts: list[Part] = [(name, lambda _: {}) for name in "abc"]
    orders = ["".join(name for name, _ in rotated(parts, n)) for n in range(4)]
    assert orders == ["abc", "bca", "cab", "abc"]


@pytest.mark.parametrize("module", ["bench.suite", "bench.peers.dbos", "bench.step_profile"])
def test_the_entry_points_explain_themselves(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "--rounds" in done.stdout or "--instances" in done.stdout


def test_a_profile_sample_counts_for_the_innermost_layer_of_its_stack() -> None:
    from bench.step_profile import shares

    raw = "\n".join(
        [
            "run (bpm/engine/jobs/runner.py:1);execute (psycopg/cursor.py:2);"
            "dumps (json/__init__.py:3) 5",
            "run (bpm/engine/jobs/runner.py:1);replace (dataclasses.py:9) 3",
            "loop (celery/worker.py:1);emit (logging/__init__.py:4) 2",
            "<module> (threading.py:1) 1",
        ]
    )
    by_layer, total = shares(raw)
    assert total == 11
    assert by_layer["JSON encoding"] == 5  # the innermost layer, not the engine that called it
    assert by_layer["bpm engine (semantics, runner)"] == 3  # a stdlib helper counts for its caller
    assert by_layer["logging"] == 2
    assert by_layer["Python itself (interpreter, stdlib)"] == 1
