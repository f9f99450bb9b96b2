"""A fork's other branches, run in process by the run that forked.

With an in-process dispatcher a branch's job would only run next on the same thread, a
transaction of its own to create its task. So a run takes them on: in the transaction that
created them, each branch whose next node is a handler task this runner runs creates its
task there, *reserved* (locked by this runner, its attempt not yet counted), and the run
goes on with them one after another when its own path stops.

A reserved task's run begins (its attempt counts, its lock runs from then) in the
transaction of the step just before it, or in one of its own when there is none; a process
that dies before reaching it leaves a task the lock scan offers again without an attempt
used up. A step of the run that changes a queued task (it ended its scope or instance)
drops it: a cancelled task's handler never runs.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from uuid import UUID

from sqlalchemy.exc import DBAPIError

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import NextToken, RunTask, Stale, Tx
from bpm.engine.semantics import conditions, steps, task_moves
from bpm.store import DatabaseUnavailable, RetryableDatabaseError

log = logging.getLogger("bpm.engine")

#: How many branches one run holds reserved at a time; the rest keep their jobs. Reserved
#: branches run even past the run's bound (nobody else can take them while they are
#: reserved): this bounds how far past it.
MAX_QUEUED = 20
#: A branch's run begun in a transaction: the branch as begun, once it has committed (None:
#: its task was no longer as reserved).
Begins = Callable[[], RunTask | None]


@dataclass
class Branch:
    """A branch's task, reserved or (``begun``) locked with its attempt counted."""

    task: RunTask
    begun: bool


class TakenBranches:
    """The branches one run took on, in the order it runs them."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core
        self._queue: list[Branch] = []

    def __bool__(self) -> bool:
        return bool(self._queue)

    def take(self, tx: Tx, g: ProcessGraph, *, next_is_theirs: bool) -> list[Branch]:
        """Take on the branches ``tx`` created that only create a handler task this runner
        runs (``steps.handler_task_only``); any other branch, or one this transaction moved
        already (the first branch's path may have ended its scope), keeps its job.
        ``next_is_theirs``: the run goes on with them right after this commit, so the first
        one's run begins in this transaction (locked, its attempt counted)."""
        if not self.core.branches_here:
            return []
        taken: list[Branch] = []
        for row, job in tx.branches:
            if len(self._queue) + len(taken) >= MAX_QUEUED:
                break
            handler = steps.handler_task_only(g, row)
            if tx.current(row) is not row or handler is None or not tx.runs_inline(handler):
                continue
            tx.jobs.remove(job)
            begins = next_is_theirs and not self._queue and not taken
            tx.reserving = not begins
            try:
                nxt = steps.carry_through(tx, g, NextToken(row.id, row.version, row=row))
            finally:
                tx.reserving = False
            if isinstance(nxt, RunTask) and nxt.locked is not None:
                taken.append(Branch(nxt, begun=begins))
            else:  # a task that failed to begin (an incident) leads nowhere; anything else
                conditions.later(tx, nxt)  # is sent, as its job would have sent it
        tx.branches.clear()
        return taken

    def begin_next(self, tx: Tx) -> Begins | None:
        """In a transaction after which the run goes on with the next queued branch, that
        branch's run begins (saving a transaction of its own), by a write that changes
        nothing when its task is no longer as reserved; None when there is none to begin."""
        if not self._queue or self._queue[0].begun:
            return None
        task = self._queue[0].task
        if task.task_id in tx.changed_tasks:
            return None
        return self._begin(tx, task)

    def settle(self, taken: list[Branch], changed: set[UUID], begins: Begins | None) -> None:
        """After a step committed: the branch whose run it began (dropped if it was no
        longer as reserved), the ones it took on, and none whose task it changed otherwise
        (it cancelled them)."""
        if begins is not None:
            begun = begins()
            if begun is None:
                dropped = self._queue.pop(0)
                log.info(
                    "no-op: task %s changed before its reserved run began", dropped.task.task_id
                )
            else:
                self._queue[0] = Branch(begun, begun=True)
        if changed:
            self._queue = [b for b in self._queue if b.task.task_id not in changed]
        # Each handler gets variables of its own: the branches of one transaction were given
        # the one dict its write read them into, the path that forked included.
        self._queue.extend(replace(b, task=_own_values(b.task)) for b in taken)

    def pop(self) -> RunTask | None:
        """The next branch to run, its run begun; None when its task changed meanwhile."""
        branch = self._queue.pop(0)
        return branch.task if branch.begun else self._begin_alone(branch.task)

    def release(self) -> None:
        """The run failed: the branches it still holds are offered again (READY, a job
        each) instead of waiting for their locks to expire and a scan. It runs while the
        run's error propagates, so it must not replace that error: a task that changed
        meanwhile (``Stale``) has nothing to give back, and when the database is what failed
        (unreachable, or still refusing after retries) the lock scan offers the rest later."""
        held, self._queue = self._queue, []
        for n, branch in enumerate(held):
            try:
                self.core.retrying(functools.partial(self._release, branch))
            except Stale:
                continue
            except (DatabaseUnavailable, RetryableDatabaseError, DBAPIError):
                log.warning(
                    "could not give back %d reserved branch tasks; the lock scan will",
                    len(held) - n,
                    exc_info=True,
                )
                return

    def _release(self, branch: Branch) -> None:
        assert branch.task.locked is not None
        with self.core.transaction() as tx:
            task_moves.release(tx, branch.task.locked)

    def _begin(self, tx: Tx, task: RunTask) -> Begins:
        assert task.locked is not None
        g = self.core.graph_of(tx, task.locked.instance_id)
        begun = task_moves.begin_reserved(tx, task.locked, g.node(task.locked.node_id).timeout)

        def begins() -> RunTask | None:
            row = begun()
            return replace(task, locked=row) if row is not None else None

        return begins

    def _begin_alone(self, task: RunTask) -> RunTask | None:
        def once() -> RunTask | None:
            with self.core.transaction() as tx:
                begins = self._begin(tx, task)
            return begins()

        begun = self.core.retrying(once)
        if begun is None:
            log.info("no-op: task %s changed before its reserved run began", task.task_id)
        return begun


def _own_values(task: RunTask) -> RunTask:
    return replace(task, values=copy.deepcopy(task.values)) if task.values is not None else task
