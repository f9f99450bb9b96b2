"""The instance search and the page of one instance: its diagram (active tokens, visited and
failed nodes, the failure's reason beside the diagram), history, variables with their
changes, open work and incidents, parent and child instances; an operator edits variables
and cancels it there."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import Response

from bpm.api import (
    LIVE_TOKEN,
    DefinitionQuery,
    InstanceHistoryQuery,
    InstanceState,
    InvalidOperation,
    LiveInstanceQuery,
    Page,
    TaskState,
    TimerState,
    VariableCondition,
    VariableOp,
)
from bpm_cockpit.access import Reader, check_form
from bpm_cockpit.actions import as_operator
from bpm_cockpit.pages import PageRoute, back_to, render, svg
from bpm_server.auth import Permission
from bpm_server.routing import runtime_of

router = APIRouter(route_class=PageRoute)
#: Tasks still to be done (or to be retried): the instance page's open work.
OPEN_TASK = frozenset({TaskState.READY, TaskState.LOCKED, TaskState.FAILED})
PAGE_SIZE = 50
NEWEST = (("started", True),)


@dataclass(frozen=True)
class InstanceSearch:
    """The search form; empty fields match everything. ``variable`` is ``name=value`` (the
    value read as JSON when it is JSON, else as text)."""

    process: str = ""
    version: str = ""
    business_key: str = ""
    state: str = ""
    started_after: str = ""
    started_before: str = ""
    variable: str = ""
    incidents: str = ""

    @classmethod
    def read(cls, values: dict[str, str]) -> InstanceSearch:
        return cls(**{n: (values.get(n) or "").strip() for n in cls.__dataclass_fields__})

    def fields(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}


def _date(text: str, what: str) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidOperation(f"{what}: {text!r} is not a date (YYYY-MM-DD[THH:MM])") from None


def _variable(text: str) -> VariableCondition:
    name, eq, raw = text.partition("=")
    if not eq or not name.strip():
        raise InvalidOperation(f"variable: {text!r} is not name=value")
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return VariableCondition(name.strip(), VariableOp.EQ, value)


def _states(s: InstanceSearch) -> list[str] | None:
    if not s.state:
        return None
    if s.state not in InstanceState.__members__:
        raise InvalidOperation(f"state {s.state!r}: one of {', '.join(InstanceState)}")
    return [s.state]


@dataclass(frozen=True)
class Cursor:
    """Where a page starts. The instance history is paged by key, not offset, so a page deep
    in a million instances costs what the first does: ``before`` is the start time of the
    last instance shown, ``skip`` how many shown instances started at that very time (they
    come first among those left). A variable search pages live instances by offset
    (``skip``) instead: that query has no start-time bound."""

    before: datetime | None = None
    skip: int = 0

    @classmethod
    def read(cls, values: dict[str, str]) -> Cursor:
        skip = values.get("skip") or "0"
        return cls(_date(values.get("before") or "", "before"), int(skip) if skip.isdigit() else 0)

    def fields(self) -> dict[str, str]:
        out = {"skip": str(self.skip)}
        if self.before is not None:
            out["before"] = self.before.isoformat()
        return out


def _next(rows: list[dict[str, Any]], cursor: Cursor) -> Cursor:
    """The cursor of the page after ``rows`` (a full page, newest first)."""
    last = rows[-1]["started_at"]
    ties = sum(1 for r in rows if r["started_at"] == last)
    return Cursor(last, ties + (cursor.skip if cursor.before == last else 0))


def _find(
    request: Request, s: InstanceSearch, cursor: Cursor
) -> tuple[list[dict[str, Any]], Cursor | None]:
    """A page of instances and the cursor of the next (None: none). One row more than shown
    is read to know whether a next page exists; nothing counts every match, which would
    read every matching row."""
    engine = runtime_of(request).engine
    definition_ids = None
    if s.version:
        if not s.process or not s.version.isdigit():
            raise InvalidOperation("version: give a process key and a version number")
        f = DefinitionQuery(key=s.process, version=int(s.version))
        definition_ids = [d.id for d in engine.find_process_definitions(f, Page(limit=1))]
    if s.variable:
        live = LiveInstanceQuery(
            business_key=s.business_key or None,
            keys=[s.process] if s.process else None,
            definition_ids=definition_ids,
            with_incident=bool(s.incidents),
            variables=[_variable(s.variable)],
        )
        rows = engine.find_live_instances(
            live, Page(cursor.skip, PAGE_SIZE + 1, (("startTime", True),))
        )
        found = [
            _row(r.id, r.process_key, None, r.business_key, r.state, r.started_at, r.ended_at)
            for r in rows
        ]
        more = len(found) > PAGE_SIZE
        return found[:PAGE_SIZE], Cursor(None, cursor.skip + PAGE_SIZE) if more else None
    before = _date(s.started_before, "started before")
    if cursor.before is not None:
        at_most = cursor.before + timedelta(microseconds=1)  # the bound is strict
        before = at_most if before is None else min(before, at_most)
    q = InstanceHistoryQuery(
        business_key=s.business_key or None,
        process_keys=[s.process] if s.process else None,
        definition_ids=definition_ids,
        states=_states(s),
        started_after=_date(s.started_after, "started after"),
        started_before=before,
        with_open_incidents=bool(s.incidents),
    )
    found = [
        _row(
            h.instance.id,
            h.instance.process_key,
            h.definition_version,
            h.instance.business_key,
            h.instance.state,
            h.instance.started_at,
            h.instance.ended_at,
        )
        for h in engine.find_instance_history(q, Page(cursor.skip, PAGE_SIZE + 1, NEWEST))
    ]
    if len(found) <= PAGE_SIZE:
        return found, None
    return found[:PAGE_SIZE], _next(found[:PAGE_SIZE], cursor)


def _row(
    iid: UUID,
    key: str,
    version: int | None,
    business_key: str | None,
    state: str,
    started: datetime,
    ended: datetime | None,
) -> dict[str, Any]:
    return {
        "id": str(iid),
        "key": key,
        "version": version,
        "business_key": business_key,
        "state": state,
        "started_at": started,
        "ended_at": ended,
    }


@router.get("/instances")
def instances_page(request: Request, caller: Reader) -> Response:
    values = dict(request.query_params)
    search, cursor = InstanceSearch.read(values), Cursor.read(values)
    found, after = _find(request, search, cursor)
    return render(
        request,
        caller,
        "instances.html",
        search=search,
        instances=found,
        first=cursor == Cursor(),
        after=after,
        states=list(InstanceState),
    )


def _failures(shown: dict[str, Any]) -> dict[str, str]:
    """The reason each failed node failed: its open incident's message."""
    return {
        i["node_id"]: i["message"]
        for i in shown["incidents"]
        if i["state"] == "OPEN" and i["node_id"] is not None
    }


@router.get("/instances/{instance_id}")
def instance_page(request: Request, caller: Reader, instance_id: str) -> Response:
    engine = runtime_of(request).engine
    shown = engine.show(instance_id)
    events = engine.trace(instance_id)
    changes = [e for e in events if e["type"] in ("VariablesChanged", "VariablesDeleted")]
    return render(
        request,
        caller,
        "instance.html",
        i=shown,
        open_tokens=[t for t in shown["tokens"] if t["state"] in LIVE_TOKEN],
        open_tasks=[t for t in shown["tasks"] if t["state"] in OPEN_TASK],
        open_timers=[t for t in shown["timers"] if t["state"] == TimerState.SCHEDULED],
        diagram=svg(engine.diagram(instance_id, "svg")),
        failures=_failures(shown),
        events=events,
        changes=changes,
        tasks=engine.user_tasks(instance_id=instance_id),
        subscriptions=engine.event_subscriptions(instance_id),
        saga=[e for e in events if "ompensat" in e["type"]],
        notice=request.query_params.get("done"),
    )


def _json_value(form: FormData) -> Any:
    raw = str(form.get("value") or "")
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidOperation(
            f'value {raw!r} is not JSON: write text in quotes ("text"), numbers and'
            " true/false as they are"
        ) from None


@router.post("/instances/{instance_id}/variables")
async def set_variable(request: Request, caller: Reader, instance_id: str) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.OPERATE)
    name = str(form.get("name") or "").strip()
    if not name:
        raise InvalidOperation("name the variable to set")
    value = _json_value(form)
    runtime = runtime_of(request)
    await run_in_threadpool(
        as_operator,
        runtime,
        caller.name,
        f"set variable {name}",
        lambda: runtime.engine.set_variables(instance_id, {name: value}),
    )
    return back_to(f"/cockpit/instances/{instance_id}", done=f"variable {name} set")


@router.post("/instances/{instance_id}/cancel")
async def cancel_instance(request: Request, caller: Reader, instance_id: str) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.OPERATE)
    runtime = runtime_of(request)
    await run_in_threadpool(
        as_operator,
        runtime,
        caller.name,
        "cancel",
        lambda: runtime.engine.cancel(instance_id, f"cancelled on the cockpit by {caller.name}"),
    )
    return back_to(f"/cockpit/instances/{instance_id}", done="cancelled")
