"""Randomly generated block-structured processes the other tests have never seen.

Each process nests sequences, exclusive choices, parallel forks and embedded subprocesses, with
some handlers that fail once before succeeding. For every one we know which tasks lie on the
path the variables select; the engine must complete the instance, run each of those tasks to
success exactly once, run no other task, and leave history consistent with the runtime rows.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.handlers import HandlerContext
from bpm.store import Database, tasks
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, Harness


@dataclass
class _Gen:
    rng: random.Random
    variables: dict[str, Any] = field(default_factory=dict)
    expected: Counter[str] = field(default_factory=Counter)
    flaky: set[str] = field(default_factory=set)
    n: int = 0

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def block(self, b: ProcessBuilder, depth: int, on_path: bool) -> tuple[str, str]:
        """Add a block to ``b``; return its entry and exit node ids."""
        if self.n > 120 or depth > 5:
            return self.task(b, on_path)  # keep processes readable and fast
        kinds = ["task", "seq"] + (["xor", "and", "sub"] if depth < 3 else [])
        kind = self.rng.choice(kinds)
        if kind == "task":
            return self.task(b, on_path)
        if kind == "seq":
            first = self.block(b, depth + 1, on_path)
            second = self.block(b, depth + 1, on_path)
            b.flow(first[1], second[0], flow_id=self.fresh("f"))
            return first[0], second[1]
        if kind == "xor":
            return self.xor(b, depth, on_path)
        if kind == "and":
            return self.fork(b, depth, on_path)
        return self.sub(b, depth, on_path)

    def task(self, b: ProcessBuilder, on_path: bool) -> tuple[str, str]:
        node = self.fresh("t")
        flaky = self.rng.random() < 0.2
        b.service_task(
            node,
            handler="flaky" if flaky else "work",
            retry={"max_attempts": 2, "backoff": "PT0S"} if flaky else None,
        )
        if on_path:
            self.expected[node] += 1
        return node, node

    def xor(self, b: ProcessBuilder, depth: int, on_path: bool) -> tuple[str, str]:
        split, merge, var = self.fresh("x"), self.fresh("m"), self.fresh("v")
        value = self.rng.randint(0, 2)
        self.variables[var] = value
        branches = self.rng.randint(2, 3)
        default = self.fresh("f")
        b.exclusive_gateway(split, default=default).exclusive_gateway(merge)
        for i in range(branches):
            taken = (value == i) if i < branches - 1 else value >= branches - 1
            entry, exit_ = self.block(b, depth + 1, on_path and taken)
            if i < branches - 1:
                b.flow(split, entry, condition=f"{var} == {i}", flow_id=self.fresh("f"))
            else:
                b.flow(split, entry, flow_id=default)
            b.flow(exit_, merge, flow_id=self.fresh("f"))
        return split, merge

    def fork(self, b: ProcessBuilder, depth: int, on_path: bool) -> tuple[str, str]:
        fork, join = self.fresh("p"), self.fresh("j")
        b.parallel_gateway(fork).parallel_gateway(join)
        for _ in range(self.rng.randint(2, 3)):
            entry, exit_ = self.block(b, depth + 1, on_path)
            b.flow(fork, entry, flow_id=self.fresh("f")).flow(exit_, join, flow_id=self.fresh("f"))
        return fork, join

    def sub(self, b: ProcessBuilder, depth: int, on_path: bool) -> tuple[str, str]:
        node = self.fresh("s")
        inner = ProcessBuilder("inner").start(self.fresh("st")).end(self.fresh("en"))
        start, end = inner.build()["nodes"][0]["id"], inner.build()["nodes"][1]["id"]
        entry, exit_ = self.block(inner, depth + 1, on_path)
        inner.flow(start, entry, flow_id=self.fresh("f")).flow(exit_, end, flow_id=self.fresh("f"))
        b.sub_process(node, inner)
        return node, node


def generate(seed: int) -> tuple[dict[str, Any], dict[str, Any], Counter[str]]:
    gen = _Gen(random.Random(seed))
    b = ProcessBuilder(f"random_{seed}").start().end()
    entry, exit_ = gen.block(b, 0, True)
    b.flow("start", entry, flow_id="f_in").flow(exit_, "end", flow_id="f_out")
    return b.build(), gen.variables, gen.expected


@pytest.mark.parametrize("seed", range(40))
def test_random_process_runs_each_task_on_its_path_once(
    seed: int, rt: Harness, calls: Calls, pg_db: Database
) -> None:
    def flaky(ctx: HandlerContext) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")

    calls.add("work")
    calls.add("flaky", flaky)
    document, variables, expected = generate(seed)
    iid = rt.run(document, variables)

    assert_finished_cleanly(pg_db, iid)
    assert_history_consistent(pg_db, iid)
    with pg_db.transaction() as conn:
        done = Counter(t.node_id for t in tasks.of_instance(conn, iid) if t.state == "DONE")
    assert done == expected
