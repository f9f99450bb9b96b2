"""What every router of the Camunda resources shares: the runtime of the request, the
callers by permission (each router names its callers by these, never by its own alias), a
list query's body, and the empty answer."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Depends, Request, Response

from bpm_server.auth import Authenticator, Permission, Principal, require
from bpm_server.runtime import runtime_of

Reader = Annotated[Principal, Depends(require(Permission.READ))]
Operator = Annotated[Principal, Depends(require(Permission.OPERATE))]
TaskWorker = Annotated[Principal, Depends(require(Permission.WORK_USER_TASKS))]
Starter = Annotated[Principal, Depends(require(Permission.START))]
Correlator = Annotated[Principal, Depends(require(Permission.CORRELATE))]
Fetcher = Annotated[Principal, Depends(require(Permission.FETCH_TASKS))]
Reporter = Annotated[Principal, Depends(require(Permission.REPORT_TASKS))]


async def _anyone(request: Request) -> Principal:
    """Any verified caller, whatever its role (what it reads is checked by the endpoint)."""
    authenticator: Authenticator = request.app.state.authenticator
    return await authenticator.authenticate(request.headers.get("authorization"))


Anyone = Annotated[Principal, Depends(_anyone)]
#: A list query's JSON body (``bpm_server.query_params`` reads it); none: no filters.
QueryBody = Annotated[dict[str, Any] | None, Body()]

__all__ = [
    "Anyone",
    "Correlator",
    "Fetcher",
    "Operator",
    "QueryBody",
    "Reader",
    "Reporter",
    "Starter",
    "TaskWorker",
    "no_content",
    "runtime_of",
]


def no_content() -> Response:
    return Response(status_code=204)
