"""Who is calling, and may they: HTTP Basic and bearer credentials, roles and their limits.

Every router declares what an endpoint needs with ``Depends(require(Permission.X))`` and gets
the verified ``Principal``; limits on topics or process keys are checked by the endpoint with
``principal.check_topic`` / ``check_process``, because only it knows which it touches.

Verifying a secret costs an scrypt derivation (tens of milliseconds, on purpose). A worker
polling in a loop would pay it on every call, so a verified secret is remembered (keyed by a
SHA-256 of name and secret, never the secret) for ``ttl`` seconds; after that its row is read
again, and a removed credential or a changed secret stops working then. With no credential
configured at all the server is open, and only when it is bound to loopback (``bpm serve``
refuses other addresses then).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from bpm import credentials
from bpm.credentials import CredentialRow
from bpm.errors import Forbidden, NotAuthenticated
from bpm.states import Role
from bpm.store import Database

DEFAULT_TTL = 10.0
_MAX_CACHED = 10_000


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
    """A verified caller. ``topics`` / ``processes`` None: not limited."""

    name: str
    role: Role
    topics: frozenset[str] | None = None
    processes: frozenset[str] | None = None

    def can(self, permission: Permission) -> bool:
        return permission in ROLE_PERMISSIONS[self.role]

    def check_topic(self, topic: str) -> None:
        if self.topics is not None and topic not in self.topics:
            raise Forbidden(f"{self.name} may not work on topic {topic!r}")

    def check_process(self, key: str, doing: str = "start or correlate") -> None:
        if self.processes is not None and key not in self.processes:
            raise Forbidden(f"{self.name} may not {doing} process {key!r}")

    @classmethod
    def of(cls, row: CredentialRow) -> Principal:
        return cls(
            row.name,
            row.role,
            None if row.topics is None else frozenset(row.topics),
            None if row.processes is None else frozenset(row.processes),
        )


ANONYMOUS = Principal("anonymous (no credential configured)", Role.OPERATOR)


@dataclass
class _Verified:
    secret_hash: str
    principal: Principal
    checked_at: float


class Authenticator:
    """Turns an ``Authorization`` header into a ``Principal`` or refuses it."""

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
        self._lock = threading.Lock()
        self._gates: dict[bytes, threading.Lock] = {}
        # Whether no credential is configured, and until when that answer holds (ttl).
        self._open, self._open_until = False, -1.0

    def principal(self, authorization: str | None) -> Principal:
        if not authorization:
            if self.is_open():
                return ANONYMOUS
            raise NotAuthenticated("this call needs a credential (HTTP Basic or Bearer)")
        name, secret = _parse(authorization)
        return self._verify(name, secret)

    def remembered(self, authorization: str | None) -> Principal | None:
        """The caller if it is known without any I/O (verified within the TTL), else None."""
        if not authorization:
            return None
        try:
            name, secret = _parse(authorization)
        except NotAuthenticated:
            return None  # ``principal`` refuses it, and logs it
        with self._lock:
            known = self._verified.get(_key(name, secret))
        return known.principal if known is not None and self._fresh(known) else None

    def _fresh(self, known: _Verified) -> bool:
        return self.clock() - known.checked_at < self.ttl

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

    def _verify(self, name: str, secret: str) -> Principal:
        key = _key(name, secret)
        with self._lock:
            known = self._verified.get(key)
            if known is not None and self._fresh(known):
                return known.principal
            # Concurrent requests with the same credential (a worker's pool of polls) wait
            # for one verification instead of each deriving the key.
            if len(self._gates) >= _MAX_CACHED:
                self._gates.clear()
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:
            return self._verify_once(key, name, secret)

    def _verify_once(self, key: bytes, name: str, secret: str) -> Principal:
        now = self.clock()
        with self._lock:
            known = self._verified.get(key)
        if known is not None and self._fresh(known):
            return known.principal
        row = credentials.lookup(self.db, name)
        if row is None:
            self._forget(key)
            raise NotAuthenticated(f"no credential {name!r}, or a wrong secret")
        if known is None or known.secret_hash != row.secret_hash:
            if not credentials.verify_secret(secret, row.secret_hash):
                self._forget(key)
                raise NotAuthenticated(f"no credential {name!r}, or a wrong secret")
        verified = _Verified(row.secret_hash, Principal.of(row), now)
        with self._lock:
            if len(self._verified) >= _MAX_CACHED:
                self._verified.clear()
            self._verified[key] = verified
        return verified.principal

    def _forget(self, key: bytes) -> None:
        with self._lock:
            self._verified.pop(key, None)


def _key(name: str, secret: str) -> bytes:
    """What the cache knows a credential by: never the secret itself."""
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
        # A credential's name is printable text; a control character (a NUL, which the
        # database cannot even compare) names none.
        if not name.isprintable():
            raise NotAuthenticated("the Basic user name may not contain control characters")
        return name, secret
    if scheme.lower() == "bearer":
        parts = credentials.split_token(value)
        if parts is None:
            raise NotAuthenticated("the bearer token is not of the form <name>.<secret>")
        return parts
    raise NotAuthenticated(f"unsupported authorization scheme {scheme!r}; use Basic or Bearer")


def require(permission: Permission) -> Callable[[Request], Awaitable[Principal]]:
    """A FastAPI dependency: the verified caller, if its role has ``permission``."""

    async def dependency(request: Request) -> Principal:
        authenticator: Authenticator = request.app.state.authenticator
        header = request.headers.get("authorization")
        # A credential verified within the TTL is answered in the event loop; anything that
        # reads the database or derives a key goes to a thread.
        principal = authenticator.remembered(header)
        if principal is None:
            principal = await run_in_threadpool(authenticator.principal, header)
        if not principal.can(permission):
            raise Forbidden(f"{principal.name} ({principal.role.lower()}) may not {permission}")
        return principal

    dependency.__name__ = f"require_{permission.name.lower()}"
    return dependency
