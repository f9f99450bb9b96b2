"""Errors as Camunda's REST API writes them: ``{"type", "message", "code"}`` in JSON.

Each bpm error maps to a status and a Camunda exception name by the first row of ``STATUS``
it is an instance of. A 500 is a fault of the server: its body says only that, with an id the
log line carries too, and never a traceback.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from bpm.api import (
    AccessDenied,
    BadVariables,
    BpmError,
    DatabaseUnavailable,
    DeploymentInvalid,
    Forbidden,
    InputRefused,
    InvalidDefinition,
    InvalidExpression,
    InvalidOperation,
    InvalidRequest,
    NotAuthenticated,
    NotFound,
    NotSupported,
    TaskClaimed,
    TaskLockError,
    UnknownProcess,
    shortened,
)

log = logging.getLogger("bpm.server")
REALM = 'Basic realm="bpm"'

#: (error class, HTTP status, Camunda exception name), most specific first.
STATUS: tuple[tuple[type[BpmError], int, str], ...] = (
    (NotAuthenticated, 401, "AuthenticationException"),
    (Forbidden, 403, "AuthorizationException"),
    (NotFound, 404, "RestException"),
    (UnknownProcess, 404, "RestException"),
    (TaskLockError, 400, "RestException"),
    (InvalidRequest, 400, "InvalidRequestException"),
    (BadVariables, 400, "InvalidRequestException"),
    (InvalidDefinition, 400, "ParseException"),
    (InvalidExpression, 400, "ParseException"),
    (InputRefused, 400, "InvalidRequestException"),
    # Camunda answers 500 for it; it is the caller's conflict with another user's claim.
    (TaskClaimed, 409, "TaskAlreadyClaimedException"),
    (InvalidOperation, 400, "BadUserRequestException"),
    (NotSupported, 501, "RestException"),
    (DatabaseUnavailable, 503, "ProcessEngineException"),
)
#: The longest error message answered, in characters.
MESSAGE_MAX = 8000
_LINE = re.compile(r"^line (\d+): (.*)$", re.DOTALL)
_COLUMN = re.compile(r"\(column (\d+)\)")


def body(kind: str, message: str, code: int = 0) -> dict[str, Any]:
    """An error body; a message longer than ``MESSAGE_MAX`` (one quoting a huge value) is cut,
    so an error is never larger than the request that caused it."""
    return {"type": kind, "message": shortened(message, MESSAGE_MAX), "code": code}


def status_of(exc: BpmError) -> tuple[int, str]:
    """The status and exception name of ``exc``; (500, ...) when no row names it."""
    for cls, status, kind in STATUS:
        if isinstance(exc, cls):
            return status, kind
    return 500, "ProcessEngineException"


def install(app: FastAPI) -> None:
    """Every error the app can raise answers in the one shape."""
    app.add_exception_handler(BpmError, _bpm_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(Exception, _fault)


async def _bpm_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BpmError)
    status, kind = status_of(exc)
    if status == 500:
        return await _fault(request, exc)
    headers = {"WWW-Authenticate": REALM} if status == 401 else None
    if isinstance(exc, AccessDenied):
        # The message names the caller and what it asked for, never a secret.
        log.warning(
            "refused %s %s from %s: %s",
            request.method,
            request.url.path,
            request.client.host if request.client else "?",
            exc,
            extra={"action": "refused", "status": status},
        )
    content = body(kind, str(exc))
    if isinstance(exc, DeploymentInvalid):
        details = parse_details(exc)
        content["message"] = parse_message(details)
        content["details"] = details
    return JSONResponse(content, status, headers=headers)


#: How Camunda's refusal of a deployment begins; Camunda Modeler recognises a parse error
#: by it and then reads ``details`` to mark the elements.
PARSE_ERROR = "ENGINE-09005 Could not parse BPMN process. Errors: "


def parse_details(exc: DeploymentInvalid) -> dict[str, Any]:
    """Camunda's ParseException details: per file, its errors with line, column and the
    element each is about (bpm's refusals start ``line N:``, XML errors name the column)."""
    out: dict[str, Any] = {}
    for resource, lines in exc.problems.items():
        cause = exc.causes.get(resource)
        errors: list[dict[str, Any]] = []
        for text in lines:
            found = _LINE.match(text)
            column = _COLUMN.search(text)
            element = cause.element_of(text) if cause is not None else None
            errors.append(
                {
                    "message": found.group(2) if found else text,
                    "line": int(found.group(1)) if found else None,
                    "column": int(column.group(1)) if column else None,
                    "mainBpmnElementId": element,
                    "bpmnElementIds": [] if element is None else [element],
                }
            )
        out[resource] = {"errors": errors, "warnings": []}
    return out


def parse_message(details: dict[str, Any]) -> str:
    """One ``* message | resource R | line N | column M`` line per error after Camunda's
    opening, as Camunda writes a refused deployment's message."""
    lines = [PARSE_ERROR]
    for resource, found in details.items():
        for error in found["errors"]:
            where = f" | resource {resource}"
            if error["line"]:
                where += f" | line {error['line']}"
            if error["column"]:
                where += f" | column {error['column']}"
            lines.append(f"* {error['message']}{where}")
    return "\n".join(lines)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(body("InvalidRequestException", validation_message(exc)), 400)


def validation_message(exc: RequestValidationError) -> str:
    """The first problem, with the field it is in: ``topics[0].lockDuration: Field required``."""
    errors = list(exc.errors())
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ""
    for part in first.get("loc", ())[1:]:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where or 'body'}: {first.get('msg', 'invalid')}{more}"


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
        where = await _huge_number_at(request)
        if where is not None:
            limit = sys.get_int_max_str_digits()
            message = f"{where}: a number of more than {limit} digits; {NUMBERS}"
            return JSONResponse(body("InvalidRequestException", message), 400)
    kind = "RestException" if exc.status_code < 500 else "ProcessEngineException"
    return JSONResponse(body(kind, str(exc.detail)), exc.status_code, headers=exc.headers)


async def _fault(request: Request, exc: Exception) -> JSONResponse:
    ref = uuid.uuid4().hex[:12]
    log.error(
        "fault %s in %s %s",
        ref,
        request.method,
        request.url.path,
        exc_info=exc,
        extra={"action": "fault", "ref": ref},
    )
    message = f"internal error {ref}; the server log has its details"
    return JSONResponse(body("ProcessEngineException", message), 500)


NUMBERS = "bpm takes 64-bit integers and finite floating-point numbers"


class _Huge:
    """Where the JSON parser met an integer too long for Python to convert."""


async def _huge_number_at(request: Request) -> str | None:
    """The path of the first integer in the body too long to convert (Python refuses more
    than ``sys.get_int_max_str_digits()`` digits, and the framework then answers only that
    the body did not parse), or None when that is not why."""
    try:
        raw = await request.body()  # kept by the request that read it
        found = json.loads(raw, parse_int=_int_or_huge)
    except (RuntimeError, ValueError):
        return None
    return _path_of_huge(found, "")


def _int_or_huge(digits: str) -> int | _Huge:
    return _Huge() if len(digits.lstrip("-")) > sys.get_int_max_str_digits() else int(digits)


def _path_of_huge(value: Any, where: str) -> str | None:
    if isinstance(value, _Huge):
        return where or "body"
    items: Any = ()
    if isinstance(value, dict):
        items = ((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    for inner, item in items:
        found = _path_of_huge(item, inner)
        if found is not None:
            return found
    return None
