"""``/event-subscription``: the messages, signals and conditions an instance listens for now
(Camunda's event subscriptions of type ``message``, ``signal`` and ``conditional``). bpm
derives them from the instance's tokens, so a list names its instance
(``processInstanceId``); docs/http-api.md says why."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from bpm.errors import InvalidRequest, NotFound
from bpm_server.models import CountDto, Dto
from bpm_server.paging import maybe_uuid, window
from bpm_server.routing import Reader, runtime_of

router = APIRouter(tags=["Event Subscription"])


class EventSubscriptionDto(Dto):
    id: str
    event_type: str
    event_name: str | None
    execution_id: str
    process_instance_id: str
    activity_id: str
    created_date: str
    tenant_id: str | None = None


def _found(
    request: Request,
    instance: str | None,
    event_type: str | None,
    event_name: str | None,
    activity_id: str | None,
    execution_id: str | None,
) -> list[EventSubscriptionDto]:
    if instance is None:
        raise InvalidRequest(
            "processInstanceId is required: bpm lists the subscriptions of one instance"
        )
    iid = maybe_uuid(instance)
    if iid is None:
        raise NotFound(f"process instance {instance!r} does not exist")
    rows: list[dict[str, Any]] = runtime_of(request).engine.event_subscriptions(iid)
    return [
        EventSubscriptionDto(
            id=r["id"],
            event_type=r["event_type"],
            event_name=r["event_name"],
            execution_id=r["token_id"],
            process_instance_id=r["instance_id"],
            activity_id=r["node_id"],
            created_date=r["created_at"],
        )
        for r in rows
        if (event_type is None or r["event_type"] == event_type)
        and (event_name is None or r["event_name"] == event_name)
        and (activity_id is None or r["node_id"] == activity_id)
        and (execution_id is None or r["token_id"] == execution_id)
    ]


Instance = Annotated[str | None, Query(alias="processInstanceId")]
EventType = Annotated[str | None, Query(alias="eventType")]
EventName = Annotated[str | None, Query(alias="eventName")]
ActivityId = Annotated[str | None, Query(alias="activityId")]
ExecutionId = Annotated[str | None, Query(alias="executionId")]


@router.get("/event-subscription", response_model=list[EventSubscriptionDto])
def event_subscriptions(
    request: Request,
    caller: Reader,
    process_instance_id: Instance = None,
    event_type: EventType = None,
    event_name: EventName = None,
    activity_id: ActivityId = None,
    execution_id: ExecutionId = None,
    first_result: Annotated[int | None, Query(alias="firstResult")] = None,
    max_results: Annotated[int | None, Query(alias="maxResults")] = None,
) -> list[EventSubscriptionDto]:
    """The instance's message and conditional subscriptions, filtered as asked."""
    limit, offset = window(first_result, max_results)
    found = _found(request, process_instance_id, event_type, event_name, activity_id, execution_id)
    return found[offset : offset + limit]


@router.get("/event-subscription/count", response_model=CountDto)
def count_event_subscriptions(
    request: Request,
    caller: Reader,
    process_instance_id: Instance = None,
    event_type: EventType = None,
    event_name: EventName = None,
    activity_id: ActivityId = None,
    execution_id: ExecutionId = None,
) -> CountDto:
    found = _found(request, process_instance_id, event_type, event_name, activity_id, execution_id)
    return CountDto(count=len(found))
