"""What every router of the Camunda resources shares: the runtime of the request, the
callers by permission, and the empty answer."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Depends, Request, Response

from bpm_server.auth import Permission, Principal, require
from bpm_server.runtime import ServerRuntime

Reader = Annotated[Principal, Depends(require(Permission.READ))]
Operator = Annotated[Principal, Depends(require(Permission.OPERATE))]
TaskWorker = Annotated[Principal, Depends(require(Permission.WORK_USER_TASKS))]
#: A list query's JSON body (``bpm_server.query_params`` reads it); none: no filters.
QueryBody = Annotated[dict[str, Any] | None, Body()]


def runtime_of(request: Request) -> ServerRuntime:
    runtime: ServerRuntime = request.app.state.runtime
    return runtime


def no_content() -> Response:
    return Response(status_code=204)
