"""The tasklist: the open user tasks a user may work on (assigned to them, or offered to them
or one of their groups), claiming one, filling its generated form and completing it; and
starting a process through its start form. Each change names the user as its actor."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import Response

from bpm.api import (
    DefinitionQuery,
    Engine,
    Forbidden,
    FormInvalid,
    Page,
    UserTaskQuery,
    UserTaskView,
)
from bpm_cockpit import camunda_forms
from bpm_cockpit.access import Caller, TaskWorker, check_form
from bpm_cockpit.actions import as_operator
from bpm_cockpit.forms import fields_of, problems_by_field, submitted
from bpm_cockpit.pages import PageRoute, back_to, render
from bpm_server.auth import Permission
from bpm_server.routing import runtime_of

router = APIRouter(route_class=PageRoute)
LIMIT = 200


def _mine(request: Request, caller: Caller) -> list[Any]:
    """Assigned to the caller, or offered to them by name or group (not yet claimed)."""
    engine = runtime_of(request).engine
    queries = [UserTaskQuery(assignee=caller.user), UserTaskQuery(candidate_user=caller.user)]
    if caller.groups:
        queries.append(UserTaskQuery(candidate_groups=list(caller.groups)))
    if caller.anonymous:
        queries = [UserTaskQuery()]  # the open server's visitor sees every task
    processes = caller.principal.processes
    seen: dict[Any, Any] = {}
    for q in queries:
        if processes is not None:
            q = replace(q, process_keys=sorted(processes))
        for view in engine.find_user_tasks(q, Page(0, LIMIT)):
            seen.setdefault(view.id, view)
    return sorted(seen.values(), key=lambda v: v.created_at)


def _offered(caller: Caller, view: UserTaskView) -> bool:
    """Whether the task is the caller's to work on: an operator may work on any; a user on
    one assigned to them, or unclaimed and offered to them, to one of their groups, or to
    nobody in particular."""
    if caller.can(Permission.OPERATE):
        return True
    if view.assignee is not None:
        return view.assignee == caller.user
    candidates = bool(view.candidate_users or view.candidate_groups)
    offered = caller.user in view.candidate_users or bool(
        set(caller.groups) & set(view.candidate_groups)
    )
    return offered or not candidates


def _task(engine: Engine, caller: Caller, task_id: str) -> UserTaskView:
    """The task, if the caller may work on it (its process, its candidates), else 403."""
    view = engine.user_task(task_id)
    caller.principal.check_process(view.process_key, "work on user tasks of")
    if not _offered(caller, view):
        raise Forbidden(f"user task {view.id} is neither assigned nor offered to {caller.user}")
    return view


def _completer(caller: Caller) -> str | None:
    """Who completes: the caller's user (a task claimed by another is refused); an operator
    completes any task."""
    return None if caller.can(Permission.OPERATE) else caller.user


def _startable(request: Request) -> list[dict[str, Any]]:
    engine = runtime_of(request).engine
    latest = engine.find_process_definitions(
        DefinitionQuery(latest_only=True), Page(limit=LIMIT, order=(("key", False),))
    )
    return [{"key": d.key, "name": d.name or d.key, "version": d.version} for d in latest]


@router.get("/tasks")
def tasks_page(request: Request, caller: TaskWorker) -> Response:
    return render(
        request,
        caller,
        "tasks.html",
        tasks=_mine(request, caller),
        processes=_startable(request),
        done=request.query_params.get("done"),
    )


@router.post("/tasks/{task_id}/claim")
async def claim(request: Request, caller: TaskWorker, task_id: str) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.WORK_USER_TASKS)
    runtime = runtime_of(request)

    def run() -> None:
        view = _task(runtime.engine, caller, task_id)
        as_operator(
            runtime, caller.user, "claim", lambda: runtime.engine.claim(view.id, caller.user)
        )

    await run_in_threadpool(run)
    return back_to(f"/cockpit/tasks/{task_id}")


def _camunda_form(engine: Engine, view: UserTaskView) -> Any:
    """The Camunda Form (``.form`` file) the task names, or None."""
    return camunda_forms.find(engine, view.form, view.definition_id)


@router.get("/tasks/{task_id}")
def task_page(request: Request, caller: TaskWorker, task_id: str) -> Response:
    engine = runtime_of(request).engine
    view = _task(engine, caller, task_id)
    doc = _camunda_form(engine, view)
    if doc is not None:
        shown = camunda_forms.components(doc, engine.user_task_variables(task_id))
        return render(request, caller, "task.html", task=view, fields=[], shown=shown, errors={})
    values = {v.name: v.value for v in engine.user_task_form_values(task_id)}
    return render(
        request, caller, "task.html", task=view, fields=fields_of(view.form, values), errors={}
    )


def _complete_camunda_form(
    request: Request, caller: Caller, view: UserTaskView, doc: Any, form: FormData
) -> Response:
    """Complete with a Camunda Form's values, or show its problems (nothing completed)."""
    runtime = runtime_of(request)
    values, problems = camunda_forms.read(doc, form)
    if problems:
        shown = camunda_forms.components(doc, values)
        return render(
            request, caller, "task.html", 400, task=view, fields=[], shown=shown, errors=problems
        )
    as_operator(
        runtime,
        caller.user,
        "complete task",
        lambda: runtime.engine.complete_user_task(view.id, values, user=_completer(caller)),
    )
    return back_to("/cockpit/tasks", done=f"completed {view.name or view.node_id}")


@router.post("/tasks/{task_id}/complete")
async def complete(request: Request, caller: TaskWorker, task_id: str) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.WORK_USER_TASKS)
    runtime = runtime_of(request)

    def run() -> Response:
        engine = runtime.engine
        view = _task(engine, caller, task_id)
        doc = _camunda_form(engine, view)
        if doc is not None:
            return _complete_camunda_form(request, caller, view, doc, form)
        values = {v.name: v.value for v in engine.user_task_form_values(task_id)}
        fields = fields_of(view.form, values)
        variables = submitted(fields, form)
        try:
            as_operator(
                runtime,
                caller.user,
                "complete task",
                lambda: engine.complete_user_task(view.id, variables, user=_completer(caller)),
            )
        except FormInvalid as exc:
            shown = fields_of(view.form, {**values, **variables})
            errors = problems_by_field(exc.problems)
            return render(request, caller, "task.html", 400, task=view, fields=shown, errors=errors)
        return back_to("/cockpit/tasks", done=f"completed {view.name or view.node_id}")

    return await run_in_threadpool(run)


def _start_form(request: Request, key: str) -> tuple[dict[str, Any], dict[str, Any] | None, Any]:
    """The latest version of ``key`` as a view, its start event's form, and the Camunda
    Form (``.form`` file) that form names, if it names one."""
    engine = runtime_of(request).engine
    shown = engine.definition(key)
    starts = [n for n in shown["nodes"] if n["type"] == "startEvent" and n.get("scope") is None]
    form = next((n["form"] for n in starts if n.get("form")), None)
    return shown, form, camunda_forms.find(engine, form, shown["id"])


@router.get("/start/{key}")
def start_page(request: Request, caller: TaskWorker, key: str) -> Response:
    shown, form, doc = _start_form(request, key)
    return render(
        request,
        caller,
        "start.html",
        process=shown,
        fields=[] if doc is not None else fields_of(form, {}),
        shown=camunda_forms.components(doc, {}) if doc is not None else [],
        errors={},
    )


@router.post("/start/{key}")
async def start(request: Request, caller: TaskWorker, key: str) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.START)
    caller.principal.check_process(key, "start")
    runtime = runtime_of(request)

    def run() -> Response:
        shown, start_form, doc = _start_form(request, key)
        business_key = str(form.get("business_key") or "").strip() or None
        fields = [] if doc is not None else fields_of(start_form, {})
        problems: dict[str, list[str]] = {}
        if doc is not None:
            variables, problems = camunda_forms.read(doc, form)
        else:
            variables = submitted(fields, form)
        try:
            if problems:
                raise FormInvalid("the start form is not valid")
            started = as_operator(
                runtime,
                caller.user,
                f"start {key}",
                lambda: runtime.engine.start(
                    key,
                    variables,
                    business_key=business_key,
                    user=caller.user,
                    submit_form=start_form is not None,
                ),
            )
        except FormInvalid as exc:
            return render(
                request,
                caller,
                "start.html",
                400,
                process=shown,
                fields=fields_of(start_form, variables) if doc is None else [],
                shown=camunda_forms.components(doc, variables) if doc is not None else [],
                errors=problems or problems_by_field(exc.problems),
                business_key=business_key or "",
            )
        return back_to("/cockpit/tasks", done=f"started {key} ({started.id})")

    return await run_in_threadpool(run)
