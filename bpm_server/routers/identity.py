"""``/user/{id}/profile`` and ``/identity/groups``: the users and groups the tasklist knows,
which are the ones the credentials name (``bpm credentials add --user --group``). bpm keeps no
profile fields beyond the id, so names and e-mail are null."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from bpm.api import CredentialRow, Forbidden, InvalidRequest, NotFound, credentials
from bpm_server.auth import Permission, Principal
from bpm_server.models import Dto
from bpm_server.routing import Anyone, runtime_of

router = APIRouter(tags=["Identity"])


class UserProfileDto(Dto):
    id: str
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None


class GroupDto(Dto):
    id: str
    name: str


class GroupUserDto(Dto):
    id: str
    first_name: str | None = None
    last_name: str | None = None
    display_name: str


class IdentityGroupsDto(Dto):
    groups: list[GroupDto]
    group_users: list[GroupUserDto]


def _user_of(row: CredentialRow) -> str:
    return row.user_id or row.name


def _check_reads(caller: Principal, user: str) -> None:
    """A caller reads its own user; reading another's needs a reader's role."""
    if user != caller.user_id and not caller.can(Permission.READ):
        raise Forbidden(f"{caller.name} may read its own user ({caller.user_id}) only")


async def _rows(request: Request) -> list[CredentialRow]:
    return await run_in_threadpool(credentials.list_all, runtime_of(request).db)


@router.get("/user/{user_id}/profile", response_model=UserProfileDto)
async def profile(user_id: str, request: Request, caller: Anyone) -> UserProfileDto:
    _check_reads(caller, user_id)
    if not any(_user_of(r) == user_id for r in await _rows(request)):
        raise NotFound(f"User with id {user_id} does not exist")
    return UserProfileDto(id=user_id)


@router.get("/identity/groups", response_model=IdentityGroupsDto)
async def groups(
    request: Request, caller: Anyone, user_id: str | None = Query(None, alias="userId")
) -> IdentityGroupsDto:
    """The user's groups, and every user of those groups."""
    if not user_id:
        raise InvalidRequest("No user id was supplied")
    _check_reads(caller, user_id)
    rows = await _rows(request)
    mine = sorted({g for r in rows if _user_of(r) == user_id for g in r.groups})
    members = sorted({_user_of(r) for r in rows if set(r.groups) & set(mine)})
    return IdentityGroupsDto(
        groups=[GroupDto(id=g, name=g) for g in mine],
        group_users=[GroupUserDto(id=u, display_name=u) for u in members],
    )
