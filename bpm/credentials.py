"""API credentials: making, hashing and checking their secrets, and keeping their rows.

A secret is shown once, when it is made, and only its scrypt hash is stored: a copy of the
database does not let anyone call the API. The same secret serves HTTP Basic (user name = the
credential's name) and bearer tokens (``<name>.<secret>``), so one credential fits either kind
of client. Nothing here knows about HTTP; the server turns a request into a name and a secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from datetime import datetime

from bpm.errors import ConfigError
from bpm.states import Role
from bpm.store import Database
from bpm.store import credentials as store
from bpm.store.credentials import CredentialRow

__all__ = [
    "CredentialRow",
    "Role",
    "add",
    "hash_secret",
    "list_all",
    "remove",
    "split_token",
    "verify_secret",
]

#: scrypt cost: n=2**14, r=8, p=1 (16 MiB, some tens of milliseconds per check).
_N, _R, _P = 2**14, 8, 1
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PREFIX = "scrypt"


def hash_secret(secret: str) -> str:
    """``scrypt$n$r$p$salt$hash``, base64: the parameters travel with the hash, so a later
    change of cost still verifies the old rows."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    return "$".join((_PREFIX, str(_N), str(_R), str(_P), _b64(salt), _b64(digest)))


def verify_secret(secret: str, stored: str) -> bool:
    """Constant-time comparison of the derived key; a malformed stored hash never matches."""
    try:
        prefix, n, r, p, salt, digest = stored.split("$")
        if prefix != _PREFIX:
            return False
        want = base64.b64decode(digest)
        got = hashlib.scrypt(
            secret.encode(),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(want),
            maxmem=2**26,
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, want)


def split_token(token: str) -> tuple[str, str] | None:
    """A bearer token's name and secret; None when it is not of the ``<name>.<secret>`` form."""
    name, dot, secret = token.partition(".")
    if not dot or not _NAME.match(name) or not secret:
        return None
    return name, secret


def add(
    db: Database,
    name: str,
    role: Role,
    now: datetime,
    topics: Sequence[str] = (),
    processes: Sequence[str] = (),
    *,
    user: str | None = None,
    groups: Sequence[str] = (),
) -> str:
    """Store a new credential and return its secret (the only time it is seen). ``user``:
    the user id it acts as on the tasklist (default: ``name``), ``groups`` that user's
    groups (a task offered to one of them is offered to it)."""
    if not _NAME.match(name):
        raise ConfigError(
            f"credential name {name!r}: use 1 to 64 letters, digits, '-' or '_'"
            " (it is the Basic user name and the first part of the bearer token)"
        )
    if topics and role is not Role.WORKER:
        raise ConfigError("--topic limits a worker; this credential's role is " + role.lower())
    if processes and role is not Role.STARTER:
        raise ConfigError("--process limits a starter; this credential's role is " + role.lower())
    for given in (user, *groups):
        if given is not None and not given.strip():
            raise ConfigError("--user and --group take a non-empty name")
    secret = secrets.token_urlsafe(32)
    row = CredentialRow(
        name,
        role,
        tuple(topics) or None,
        tuple(processes) or None,
        hash_secret(secret),
        now,
        user,
        tuple(dict.fromkeys(groups)),
    )
    with db.transaction() as conn:
        if store.get(conn, name) is not None:
            raise ConfigError(f"a credential named {name!r} exists; remove it first")
        store.insert(conn, row)
    return secret


def remove(db: Database, name: str) -> None:
    with db.transaction() as conn:
        if not store.delete(conn, name):
            raise ConfigError(f"no credential is named {name!r}")


def list_all(db: Database) -> list[CredentialRow]:
    with db.transaction() as conn:
        return store.all_rows(conn)


def lookup(db: Database, name: str) -> CredentialRow | None:
    with db.transaction() as conn:
        return store.get(conn, name)


def configured(db: Database) -> int:
    """How many credentials there are (none: the server only serves loopback, openly)."""
    with db.transaction() as conn:
        return store.count(conn)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
