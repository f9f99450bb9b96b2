"""Who is calling, and may they: HTTP Basic and bearer credentials, roles and their limits.

Every router declares what an endpoint needs with ``Depends(require(Permission.X))`` and gets
the verified ``Principal``; limits on topics or process keys are checked by the endpoint with
``principal.check_topic`` / ``check_process``, because only it knows which it touches.

Verifying a secret costs an scrypt derivation (tens of milliseconds, on purpose). A worker
polling in a loop would pay it on every call, so a verified secret is remembered (keyed by a
SHA-256 of name and secret, never the secret) for ``ttl`` seconds; after that its row is read
again, and a removed credential or a changed secret stops working then (a waiting long poll
checks again too: ``long_poll``). What a wrong secret may cost the others is bounded (see
``Authenticator``). With no credential configured at all the server is open, and only when it
is bound to loopback (``bpm serve`` refuses other addresses then).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from bpm.api import CredentialRow, Database, Forbidden, NotAuthenticated, Role, credentials, quoted

DEFAULT_TTL = 10.0
_MAX_CACHED = 10_000
_T = TypeVar("_T")


class Permission(StrEnum):
    FETCH_TASKS = "fetch external tasks"
    REPORT_TASKS = "report on external tasks"
    START = "start processes"
    CORRELATE = "correlate messages"
    #: Claim, unclaim, complete and submit the forms of user tasks: a service acting for
    #: its users (the task lists need READ).
    WORK_USER_TASKS = "work on user tasks"
    READ = "read"
    OPERATE = "operate"


ROLE_PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.WORKER: frozenset({Permission.FETCH_TASKS, Permission.REPORT_TASKS}),
    Role.STARTER: frozenset({Permission.START, Permission.CORRELATE, Permission.WORK_USER_TASKS}),
    Role.VIEWER: frozenset({Permission.READ}),
    Role.OPERATOR: frozenset(Permission),
}


@dataclass(frozen=True)
class Principal:
    """A verified caller. ``topics`` / ``processes`` None: not limited. ``user``: the user
    it acts as on the tasklist (None: its name), ``groups`` that user's groups."""

    name: str
    role: Role
    topics: frozenset[str] | None = None
    processes: frozenset[str] | None = None
    user: str | None = None
    groups: frozenset[str] = frozenset()

    def can(self, permission: Permission) -> bool:
        return permission in ROLE_PERMISSIONS[self.role]

    @property
    def user_id(self) -> str:
        """The user this caller is on the tasklist: its user, else its credential's name."""
        return self.user or self.name

    def check_topic(self, topic: str) -> None:
        if self.topics is not None and topic not in self.topics:
            raise Forbidden(f"{self.name} may not work on topic {topic!r}")

    def check_process(
        self, key: str, doing: str = "start or correlate", *, given: str | None = None
    ) -> None:
        """``given``: what the caller named the process by (a definition id), which the
        refusal names instead of the key the caller may not see."""
        if self.processes is not None and key not in self.processes:
            what = f"process {key!r}" if given is None else f"process definition {quoted(given)}"
            raise Forbidden(f"{self.name} may not {doing} {what}")

    def check_variables_read(self, field: str) -> None:
        """Variables in an answer are a read of the instance: a caller asking for them with
        ``field`` must have a role that reads (viewer, operator), whatever it may change."""
        if not self.can(Permission.READ):
            raise Forbidden(
                f"{field}: {self.name} ({self.role.lower()}) may not read an instance's"
                " variables; only a viewer or an operator may ask for them"
            )

    @classmethod
    def of(cls, row: CredentialRow) -> Principal:
        return cls(
            row.name,
            row.role,
            None if row.topics is None else frozenset(row.topics),
            None if row.processes is None else frozenset(row.processes),
            row.user,
            frozenset(row.groups),
        )


ANONYMOUS = Principal("anonymous (no credential configured)", Role.OPERATOR)


@dataclass
class _Verified:
    secret_hash: str
    principal: Principal
    checked_at: float


#: Threads that derive keys. A flood of wrong secrets queues here, so it can take no more
#: CPU than this many derivations at once; callers already verified never wait on it.
HASH_THREADS = 2
_WRONG = "no credential {}, or a wrong secret"


class Authenticator:
    """Turns an ``Authorization`` header into a ``Principal`` or refuses it.

    Used from the event loop only. A secret verified within the TTL is answered there; the
    credential's row is read in a thread, and a key derived on the small ``HASH_THREADS``
    pool, so a flood of wrong secrets queues behind itself, not behind other callers. A
    name and secret that failed are refused for the TTL without deriving again. A name with
    no credential is derived against a stand-in hash, so it costs what a known name costs
    and the timing does not tell which names exist.
    """

    def __init__(
        self,
        db: Database,
        *,
        open_on_loopback: bool,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db, self.open_on_loopback, self.ttl, self.clock = db, open_on_loopback, ttl, clock
        self._verified: dict[bytes, _Verified] = {}
        self._failed: dict[bytes, float] = {}
        self._pending: dict[bytes, asyncio.Future[Principal]] = {}
        self._hashing = ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="bpm-auth-hash")
        self._stand_in = credentials.hash_secret(secrets.token_urlsafe(32))
        # Whether no credential is configured, and until when that answer holds (ttl).
        self._open, self._open_until = False, -1.0

    def close(self) -> None:
        self._hashing.shutdown(wait=False, cancel_futures=True)

    async def authenticate(self, authorization: str | None) -> Principal:
        """The caller, or ``NotAuthenticated``. Concurrent requests with the same credential
        (a worker's pool of polls) wait for one check instead of each making it."""
        if not authorization:
            if await self._is_open():
                return ANONYMOUS
            raise NotAuthenticated("this call needs a credential (HTTP Basic or Bearer)")
        name, secret = _parse(authorization)
        key = _key(name, secret)
        now = self.clock()
        known = self._verified.get(key)
        if known is not None and now - known.checked_at < self.ttl:
            return known.principal
        failed_at = self._failed.get(key)
        if failed_at is not None and now - failed_at < self.ttl:
            raise NotAuthenticated(_WRONG.format(quoted(name)))
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._check(key, name, secret, known))
            self._pending[key] = pending
            pending.add_done_callback(lambda done: self._settled(key, done))
        # Shielded: a caller that goes away does not cancel the check the others wait for.
        return await asyncio.shield(pending)

    async def confirm(self, authorization: str | None) -> Principal:
        """The caller as the credential table says now, past the TTL cache: a long poll calls
        it before each fetch after its first, so a credential removed or limited while the
        poll waits locks nothing more. The secret was verified against this very hash, so
        only the row is read."""
        principal = await self.authenticate(authorization)
        if principal is ANONYMOUS or not authorization:
            return principal
        name, secret = _parse(authorization)
        key = _key(name, secret)
        row = await run_in_threadpool(credentials.lookup, self.db, name)
        known = self._verified.get(key)
        if row is None or known is None or known.secret_hash != row.secret_hash:
            self._verified.pop(key, None)
            raise NotAuthenticated(_WRONG.format(quoted(name)))
        return self._remember(key, row, self.clock())

    def _settled(self, key: bytes, done: asyncio.Future[Principal]) -> None:
        self._pending.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: every waiter may have gone away

    async def _is_open(self) -> bool:
        known = self.known_open()
        return known if known is not None else await run_in_threadpool(self.is_open)

    def is_open(self) -> bool:
        """Whether anyone may call without a credential: none is configured and the server is
        bound to loopback. Either answer holds for the TTL, so a server that closed when a
        credential was added does not read the table again for every anonymous call."""
        known = self.known_open()
        if known is not None:
            return known
        self._open = credentials.configured(self.db) == 0
        self._open_until = self.clock() + self.ttl
        return self._open

    def known_open(self) -> bool | None:
        """``is_open`` if it is known without reading the database, else None."""
        if not self.open_on_loopback:
            return False
        return self._open if self.clock() < self._open_until else None

    async def _check(
        self, key: bytes, name: str, secret: str, known: _Verified | None
    ) -> Principal:
        now = self.clock()
        row = await run_in_threadpool(credentials.lookup, self.db, name)
        if row is not None and known is not None and known.secret_hash == row.secret_hash:
            # Verified before against this very hash: only the row had to be read again.
            return self._remember(key, row, now)
        stored = row.secret_hash if row is not None else self._stand_in
        loop = asyncio.get_running_loop()
        ok = await loop.run_in_executor(self._hashing, credentials.verify_secret, secret, stored)
        if row is None or not ok:
            self._verified.pop(key, None)
            _bounded(self._failed)[key] = self.clock()
            raise NotAuthenticated(_WRONG.format(quoted(name)))
        self._failed.pop(key, None)
        return self._remember(key, row, now)

    def _remember(self, key: bytes, row: CredentialRow, now: float) -> Principal:
        verified = _Verified(row.secret_hash, Principal.of(row), now)
        _bounded(self._verified)[key] = verified
        return verified.principal


def _bounded(cache: dict[bytes, _T]) -> dict[bytes, _T]:
    """``cache``, emptied when full: memory stays bounded whatever callers send."""
    if len(cache) >= _MAX_CACHED:
        cache.clear()
    return cache


def _key(name: str, secret: str) -> bytes:
    """What the caches know a credential by: never the secret itself."""
    return hashlib.sha256(f"{name}\0{secret}".encode()).digest()


def _parse(header: str) -> tuple[str, str]:
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            name, colon, secret = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise NotAuthenticated("the Basic credentials are not base64 of name:secret") from None
        if not colon:
            raise NotAuthenticated("the Basic credentials are not base64 of name:secret")
    elif scheme.lower() == "bearer":
        parts = credentials.split_token(value)
        if parts is None:
            raise NotAuthenticated("the bearer token is not of the form <name>.<secret>")
        name, secret = parts
    else:
        raise NotAuthenticated(f"unsupported authorization scheme {scheme!r}; use Basic or Bearer")
    # No credential name or secret holds one; the database would refuse a NUL in the query.
    if _CONTROL.search(name) or _CONTROL.search(secret):
        raise NotAuthenticated(
            "the credentials (user name or secret) hold a control character; no credential does"
        )
    return name, secret


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def require(permission: Permission) -> Callable[[Request], Awaitable[Principal]]:
    """A FastAPI dependency: the verified caller, if its role has ``permission``."""

    async def dependency(request: Request) -> Principal:
        authenticator: Authenticator = request.app.state.authenticator
        principal = await authenticator.authenticate(request.headers.get("authorization"))
        if not principal.can(permission):
            raise Forbidden(f"{principal.name} ({principal.role.lower()}) may not {permission}")
        return principal

    dependency.__name__ = f"require_{permission.name.lower()}"
    return dependency
