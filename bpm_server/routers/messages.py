"""``/message`` and ``/signal``: correlating a message to the tokens waiting for it;
broadcasting a signal to every subscription that exists when it is thrown (docs/http-api.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from bpm.api import LIVE_INSTANCE, AmbiguousCorrelation, Correlated, InvalidRequest, NoMatchingWait
from bpm_server.ids import maybe_uuid
from bpm_server.message_models import CorrelationMessageDto, MessageResultDto, SignalDto
from bpm_server.models import wire
from bpm_server.routing import Correlator
from bpm_server.runtime import ServerRuntime, runtime_of
from bpm_server.variables import decode_variables, encode_variables

router = APIRouter(tags=["Message"])


@router.post("/message", response_model=list[MessageResultDto] | None)
def correlate(
    body: CorrelationMessageDto, request: Request, caller: Correlator
) -> list[MessageResultDto] | Response:
    """Deliver ``messageName`` to the token waiting for it in the instance named by
    ``processInstanceId`` or ``businessKey`` (and whose variables equal ``correlationKeys``);
    with ``all``, to every such token. When none waits (or with ``startMessagesOnly``) and no
    instance is named, start an instance at the message start event waiting for it. 204, or
    200 with the results when asked for."""
    name = body.message_name
    if body.tenant_id is not None:
        raise InvalidRequest("tenantId: bpm has no tenants")
    for field, given in (
        ("localCorrelationKeys", body.local_correlation_keys),
        ("processVariablesLocal", body.process_variables_local),
    ):
        if given:
            raise InvalidRequest(
                f"{field}: bpm sets and matches a message's variables on the instance only"
            )
    if body.variables_in_result_enabled:
        caller.check_variables_read("variablesInResultEnabled")
    instance_id = None
    if body.process_instance_id is not None:
        instance_id = maybe_uuid(body.process_instance_id)
        if instance_id is None:
            raise InvalidRequest(
                f"Cannot correlate message '{name}': no process instance {body.process_instance_id}"
            )
    keys = decode_variables(wire(body.correlation_keys))
    values = decode_variables(wire(body.process_variables))
    runtime = runtime_of(request)

    def run() -> list[Correlated]:
        return runtime.engine.correlate_tokens(
            name,
            business_key=body.business_key,
            instance_id=instance_id,
            variables=values,
            all_waiting=bool(body.all),
            start_messages_only=bool(body.start_messages_only),
            correlation_keys=keys,
            # A starter limited to some processes correlates only to instances of those,
            # as the correlating transaction reads them.
            process_keys=caller.processes,
        )

    try:
        found = runtime.run(run)
    except (NoMatchingWait, AmbiguousCorrelation) as exc:
        raise InvalidRequest(f"Cannot correlate message '{name}': {exc}") from None
    if not body.result_enabled:
        return Response(status_code=204)
    return [_result(runtime, c, bool(body.variables_in_result_enabled)) for c in found]


def _result(runtime: ServerRuntime, c: Correlated, with_variables: bool) -> MessageResultDto:
    shown = runtime.engine.show(c.instance_id)
    ended = shown["state"] not in LIVE_INSTANCE
    variables = encode_variables(shown["variables"]) if with_variables else None
    if c.started:  # a message start event began the instance, as Camunda answers it
        instance: dict[str, Any] = {
            "id": str(c.instance_id),
            "definitionId": str(shown["definition_id"]),
            "businessKey": shown.get("business_key"),
            "caseInstanceId": None,
            "ended": ended,
            "suspended": False,
            "tenantId": None,
            "links": [],
        }
        return MessageResultDto(
            result_type="ProcessDefinition",
            execution=None,
            process_instance=instance,
            variables=variables,
        )
    execution = {
        "id": str(c.token_id),
        "processInstanceId": str(c.instance_id),
        "ended": ended,
        "tenantId": None,
    }
    return MessageResultDto(
        result_type="Execution", execution=execution, process_instance=None, variables=variables
    )


@router.post("/signal", status_code=204)
def signal(body: SignalDto, request: Request, caller: Correlator) -> Response:
    """Throw ``name``: every signal catch, boundary, event subprocess and event after a
    gateway listening now receives it (with ``variables``), and every process with a signal
    start event on it starts; with ``executionId``, only that execution's subscriptions. A
    caller limited to some processes reaches instances and starts of those only. 204 once
    the throw is stored; the deliveries follow in jobs of their own."""
    if body.tenant_id is not None:
        raise InvalidRequest("tenantId: bpm has no tenants")
    token_id = None
    if body.execution_id is not None:
        token_id = maybe_uuid(body.execution_id)
        if token_id is None:
            raise InvalidRequest(
                f"Cannot throw signal '{body.name}': no execution {body.execution_id}"
            )
    values = decode_variables(wire(body.variables))
    runtime = runtime_of(request)

    def run() -> None:
        runtime.engine.throw_signal(
            body.name, values, token_id=token_id, process_keys=caller.processes
        )

    try:
        runtime.run(run)
    except NoMatchingWait as exc:
        raise InvalidRequest(f"Cannot throw signal '{body.name}': {exc}") from None
    return Response(status_code=204)
