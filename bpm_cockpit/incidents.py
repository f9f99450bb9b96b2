"""The incidents page: open incidents across instances, filtered and paged; retry, resolve
or cancel the selected ones, or every one matching the filter after a page that shows how
many that is."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import Response

from bpm.api import IncidentQuery, InvalidOperation, Page
from bpm_cockpit.access import Caller, Reader, check_form
from bpm_cockpit.actions import Action, act
from bpm_cockpit.pages import PageRoute, back_to, render
from bpm_server.auth import Permission
from bpm_server.routing import runtime_of

router = APIRouter(route_class=PageRoute)
PAGE_SIZE = 50
#: At most this many incidents are acted on by one "all matching" confirmation.
BULK_LIMIT = 1000
NEWEST = (("created", True),)


@dataclass(frozen=True)
class IncidentFilter:
    """What the incidents page filters on; empty fields match everything."""

    process: str = ""
    type: str = ""
    message: str = ""
    instance: str = ""

    @classmethod
    def read(cls, values: FormData | dict[str, str]) -> IncidentFilter:
        return cls(
            *(str(values.get(n) or "").strip() for n in ("process", "type", "message", "instance"))
        )

    def query(self) -> IncidentQuery:
        instance = _uuid(self.instance, "instance") if self.instance else None
        return IncidentQuery(
            process_keys=[self.process] if self.process else None,
            types=[self.type] if self.type else None,
            message_like=f"%{_escape(self.message)}%" if self.message else None,
            instance_ids=[instance] if instance else None,
        )

    def fields(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _uuid(text: str, what: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise InvalidOperation(f"{what} {text!r} is not an id (a UUID)") from None


@router.get("/incidents")
def incidents_page(request: Request, caller: Reader, offset: int = 0) -> Response:
    f = IncidentFilter.read(dict(request.query_params))
    engine = runtime_of(request).engine
    q = f.query()
    offset = max(offset, 0)
    found = engine.find_incidents(q, Page(offset, PAGE_SIZE, NEWEST))
    total = engine.count_incidents(q)
    return render(
        request,
        caller,
        "incidents.html",
        incidents=found,
        total=total,
        filter=f,
        offset=offset,
        page_size=PAGE_SIZE,
        done=request.query_params.get("done"),
        refused=request.query_params.get("refused"),
        actions=list(Action),
    )


def _action(form: FormData) -> Action:
    try:
        return Action(str(form.get("action")))
    except ValueError:
        raise InvalidOperation("choose an action: retry, resolve or cancel") from None


@router.post("/incidents/act")
async def act_on_selected(request: Request, caller: Reader) -> Response:
    form = await request.form()
    check_form(caller, form, Permission.OPERATE)
    action = _action(form)
    ids = [_uuid(str(i), "incident") for i in form.getlist("incident")]
    runtime = runtime_of(request)

    back = str(form.get("back") or "")

    def run() -> Response:
        found = runtime.engine.find_incidents(IncidentQuery(incident_ids=ids), Page(0, len(ids)))
        outcome = act(runtime, caller.name, action, found)
        if back.startswith("/cockpit/") and "//" not in back and not outcome.refused:
            return back_to(back, done=f"{action} {outcome.done}")
        return _result(request, caller, action, outcome.done, outcome.refused, len(ids))

    return await run_in_threadpool(run)


@router.post("/incidents/bulk")
async def act_on_matching(request: Request, caller: Reader) -> Response:
    """First a page with how many incidents match and a confirm button; then, confirmed,
    the action on each of them (at most ``BULK_LIMIT``)."""
    form = await request.form()
    check_form(caller, form, Permission.OPERATE)
    action, f = _action(form), IncidentFilter.read(form)
    runtime = runtime_of(request)

    def run() -> Response:
        engine = runtime.engine
        if form.get("confirmed") != "yes":
            count = engine.count_incidents(f.query())
            return render(
                request,
                caller,
                "confirm.html",
                action=action,
                filter=f,
                count=count,
                limit=BULK_LIMIT,
            )
        found = engine.find_incidents(f.query(), Page(0, BULK_LIMIT, NEWEST))
        outcome = act(runtime, caller.name, action, found)
        return _result(request, caller, action, outcome.done, outcome.refused, len(found))

    return await run_in_threadpool(run)


def _result(
    request: Request, caller: Caller, action: Action, done: int, refused: list[str], asked: int
) -> Response:
    return render(
        request,
        caller,
        "acted.html",
        action=action,
        done=done,
        refused=refused,
        asked=asked,
    )
