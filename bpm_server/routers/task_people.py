"""``/task/{id}/identity-links``, ``/assignee`` and ``/comment``: who may work on an open
task, who has it, and what people wrote on it (docs/http-api.md)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request, Response

from bpm.api import CommentRow, InvalidRequest, NotFound
from bpm_server.auth import Principal
from bpm_server.dates import format_date
from bpm_server.models import Dto
from bpm_server.routers.tasks import check_process
from bpm_server.routing import Reader, TaskWorker, no_content, runtime_of
from bpm_server.task_models import UserIdDto

router = APIRouter(prefix="/task", tags=["Task"])


class IdentityLinkDto(Dto):
    user_id: str | None = None
    group_id: str | None = None
    type: str


class CommentDto(Dto):
    id: str
    user_id: str | None
    task_id: str
    process_instance_id: str
    time: str | None
    message: str
    removal_time: str | None = None
    root_process_instance_id: str


class NewCommentDto(Dto):
    message: str | None = None
    process_instance_id: str | None = None


@router.get("/{task_id}/identity-links", response_model=list[IdentityLinkDto])
def identity_links(
    task_id: str,
    request: Request,
    caller: Reader,
    link_type: str | None = Query(None, alias="type"),
) -> list[IdentityLinkDto]:
    """The assignee and the candidate users and groups (bpm keeps no owner)."""
    view = runtime_of(request).engine.user_task(task_id)
    links = []
    if view.assignee is not None:
        links.append(IdentityLinkDto(user_id=view.assignee, type="assignee"))
    links += [IdentityLinkDto(user_id=u, type="candidate") for u in view.candidate_users]
    links += [IdentityLinkDto(group_id=g, type="candidate") for g in view.candidate_groups]
    return [link for link in links if link_type is None or link.type == link_type]


@router.post("/{task_id}/identity-links", status_code=204, response_class=Response)
def add_identity_link(
    task_id: str, body: IdentityLinkDto, request: Request, caller: TaskWorker
) -> Response:
    _change_link(task_id, body, request, caller, add=True)
    return no_content()


@router.post("/{task_id}/identity-links/delete", status_code=204, response_class=Response)
def delete_identity_link(
    task_id: str, body: IdentityLinkDto, request: Request, caller: TaskWorker
) -> Response:
    _change_link(task_id, body, request, caller, add=False)
    return no_content()


def _change_link(
    task_id: str, link: IdentityLinkDto, request: Request, caller: Principal, *, add: bool
) -> None:
    runtime = runtime_of(request)
    engine, actor = runtime.engine, caller.name
    view = engine.user_task(task_id)
    check_process(view, caller)
    if (link.user_id is None) == (link.group_id is None):
        raise InvalidRequest("an identity link names a userId or a groupId, not both")
    if link.type == "owner":
        raise InvalidRequest("bpm has no task owners; use type assignee or candidate")
    if link.type == "assignee":
        if link.group_id is not None:
            raise InvalidRequest("an assignee is a user: give userId")
        user = link.user_id if add else None
        if not add and view.assignee != link.user_id:
            return  # removing someone who is not the assignee changes nothing
        runtime.run(lambda: engine.set_assignee(view.id, user, actor=actor))
        return
    if link.type != "candidate":
        raise InvalidRequest(f"identity link type {link.type!r}: use assignee or candidate")
    users = [link.user_id] if link.user_id is not None else []
    groups = [link.group_id] if link.group_id is not None else []
    edits = (
        {"add_users": users, "add_groups": groups}
        if add
        else {"remove_users": users, "remove_groups": groups}
    )
    runtime.run(lambda: engine.edit_candidates(view.id, actor=actor, **edits))


@router.post("/{task_id}/assignee", status_code=204, response_class=Response)
def set_assignee(task_id: str, body: UserIdDto, request: Request, caller: TaskWorker) -> Response:
    """Whoever has the task now (``claim`` refuses one someone else has); null unassigns."""
    runtime = runtime_of(request)
    view = runtime.engine.user_task(task_id)
    check_process(view, caller)
    user = body.user_id
    runtime.run(lambda: runtime.engine.set_assignee(view.id, user, actor=caller.name))
    return no_content()


def _comment_dto(c: CommentRow) -> CommentDto:
    return CommentDto(
        id=str(c.id),
        user_id=c.user_id,
        task_id=str(c.task_id),
        process_instance_id=str(c.instance_id),
        time=format_date(c.at),
        message=c.message,
        root_process_instance_id=str(c.instance_id),
    )


@router.get("/{task_id}/comment", response_model=list[CommentDto])
def comments(task_id: str, request: Request, caller: Reader) -> list[CommentDto]:
    """Oldest first; a task's comments stay after it ends."""
    return [_comment_dto(c) for c in runtime_of(request).engine.comments(task_id)]


@router.get("/{task_id}/comment/{comment_id}", response_model=CommentDto)
def comment(task_id: str, comment_id: str, request: Request, caller: Reader) -> CommentDto:
    for c in runtime_of(request).engine.comments(task_id):
        if str(c.id) == comment_id:
            return _comment_dto(c)
    raise NotFound(f"task {task_id} has no comment with id {comment_id}")


@router.post("/{task_id}/comment/create", response_model=CommentDto)
def create_comment(
    task_id: str, body: NewCommentDto, request: Request, caller: TaskWorker
) -> CommentDto:
    """Written by the caller's user; ``processInstanceId``, when given, must be the task's."""
    runtime = runtime_of(request)
    view = runtime.engine.user_task(task_id)
    check_process(view, caller)
    given = body.process_instance_id
    if given is not None and given != str(view.instance_id):
        raise InvalidRequest(f"processInstanceId {given} is not the instance of task {task_id}")
    if not body.message:
        raise InvalidRequest("a comment needs a message")
    message = body.message
    made = runtime.run(lambda: runtime.engine.add_comment(view.id, message, user=caller.user_id))
    return _comment_dto(made)
