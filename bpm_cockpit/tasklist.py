"""The tasklist: the open user tasks a user may work on (assigned to them, or offered to them
or one of their groups), claiming one, filling its generated form and completing it; and
starting a process through its start form. Each change names the user as its actor."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import Response

from bpm.engine.engine import Engine
from bpm.engine.operations.task_views import UserTaskView
from bpm.errors import FormInvalid
from bpm.store.definition_queries import DefinitionFilter
from bpm.store.paging import Page
from bpm.store.user_task_queries import UserTaskQuery
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
    seen: dict[Any, Any] = {}
    for q in queries:
        for view in engine.find_user_tasks(q, Page(0, LIMIT)):
            seen.setdefault(view.id, view)
    return sorted(seen.values(), key=lambda v: v.created_at)


def _startable(request: Request) -> list[dict[str, Any]]:
    engine = runtime_of(request).engine
    latest = engine.process_definitions(DefinitionFilter(latest_only=True), sort="key", limit=LIMIT)
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
    await run_in_threadpool(
        as_operator,
        runtime,
        caller.user,
        "claim",
        lambda: runtime.engine.claim(task_id, caller.user),
    )
    return back_to(f"/cockpit/tasks/{task_id}")


def _camunda_form(engine: Engine, view: UserTaskView) -> Any:
    """The Camunda Form (``.form`` file) the task names, or None."""
    deployment = engine.process_definition(view.definition_id).deployment_id
    return camunda_forms.find(engine, view.form, deployment)


@router.get("/tasks/{task_id}")
def task_page(request: Request, caller: TaskWorker, task_id: str) -> Response:
    engine = runtime_of(request).engine
    view = engine.user_task(task_id)
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
        lambda: runtime.engine.complete_user_task(view.id, values, user=view.assignee),
    )
    return back_to("/cockpit/tasks", done=f"completed {view.name or view.node_id}")


@router.post("/tasks/{task_id}/complete")
async def complete(request: Request, caller: TaskWorker, task_id: str) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.WORK_USER_TASKS)
    runtime = runtime_of(request)

    def run() -> Response:
        engine = runtime.engine
        view = engine.user_task(task_id)
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
                lambda: engine.complete_user_task(task_id, variables, user=view.assignee),
            )
        except FormInvalid as exc:
            shown = fields_of(view.form, {**values, **variables})
            errors = problems_by_field(exc.problems)
            return render(request, caller, "task.html", 400, task=view, fields=shown, errors=errors)
        return back_to("/cockpit/tasks", done=f"completed {view.name or view.node_id}")

    return await run_in_threadpool(run)


def _start_form(request: Request, key: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    shown = runtime_of(request).engine.definition(key)
    starts = [n for n in shown["nodes"] if n["type"] == "startEvent" and n.get("scope") is None]
    return shown, next((n["form"] for n in starts if n.get("form")), None)


@router.get("/start/{key}")
def start_page(request: Request, caller: TaskWorker, key: str) -> Response:
    shown, form = _start_form(request, key)
    return render(
        request, caller, "start.html", process=shown, fields=fields_of(form, {}), errors={}
    )


@router.post("/start/{key}")
async def start(request: Request, caller: TaskWorker, key: str) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.START)
    caller.principal.check_process(key, "start")
    runtime = runtime_of(request)

    def run() -> Response:
        shown, start_form = _start_form(request, key)
        fields = fields_of(start_form, {})
        variables = submitted(fields, form)
        business_key = str(form.get("business_key") or "").strip() or None
        try:
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
            shown_fields = fields_of(start_form, variables)
            errors = problems_by_field(exc.problems)
            return render(
                request,
                caller,
                "start.html",
                400,
                process=shown,
                fields=shown_fields,
                errors=errors,
                business_key=business_key or "",
            )
        return back_to("/cockpit/tasks", done=f"started {key} ({started.id})")

    return await run_in_threadpool(run)
