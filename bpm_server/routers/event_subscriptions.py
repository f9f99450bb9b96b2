"""``/event-subscription``: the messages, signals and conditions an instance listens for now
(Camunda's event subscriptions of type ``message``, ``signal`` and ``conditional``). bpm
derives them from the instance's tokens, so a list names its instance
(``processInstanceId``); docs/http-api.md says why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request

from bpm.api import Engine, EventSubscriptionQuery, InvalidRequest, NotFound
from bpm_server.ids import maybe_uuid
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.models import Dto
from bpm_server.query_params import Kind, QuerySpec

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


def subscription_query(f: Mapping[str, Any]) -> EventSubscriptionQuery:
    instance = f.get("processInstanceId")
    if instance is None:
        raise InvalidRequest(
            "processInstanceId is required: bpm lists the subscriptions of one instance"
        )
    iid = maybe_uuid(instance)
    if iid is None:
        raise NotFound(f"process instance {instance!r} does not exist")
    return EventSubscriptionQuery(
        iid, f.get("eventType"), f.get("eventName"), f.get("activityId"), f.get("executionId")
    )


def _dto(request: Request, r: dict[str, Any]) -> EventSubscriptionDto:
    return EventSubscriptionDto(
        id=r["id"],
        event_type=r["event_type"],
        event_name=r["event_name"],
        execution_id=r["token_id"],
        process_instance_id=r["instance_id"],
        activity_id=r["node_id"],
        created_date=r["created_at"],
    )


SUBSCRIPTIONS: ListResource[EventSubscriptionQuery, dict[str, Any]] = ListResource(
    QuerySpec(
        "event subscription",
        {
            "processInstanceId": Kind.TEXT,
            "eventType": Kind.TEXT,
            "eventName": Kind.TEXT,
            "activityId": Kind.TEXT,
            "executionId": Kind.TEXT,
        },
        {"created": None, "tenantId": None},
        {"eventSubscriptionId": "not supported yet", "tenantIdIn": "bpm has no tenants"},
    ),
    subscription_query,
    Engine.find_event_subscriptions,
    Engine.count_event_subscriptions,
    _dto,
    EventSubscriptionDto,
)
add_list_routes(router, "/event-subscription", SUBSCRIPTIONS, post=False)
