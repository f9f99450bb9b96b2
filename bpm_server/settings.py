"""The server's configuration, from the environment like every bpm process.

``bpm serve`` sets ``BPM_SERVER_BIND_HOST`` for its worker processes: only a server that knows
it is bound to loopback may serve without credentials. Run under another ASGI server, the app
does not know, and so always wants credentials.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

from bpm.api import ConfigError, database_url
from bpm_server.auth import DEFAULT_TTL

BIND_HOST_ENV = "BPM_SERVER_BIND_HOST"
TTL_ENV = "BPM_SERVER_CREDENTIAL_TTL"
ORIGINS_ENV = "BPM_SERVER_ALLOWED_ORIGINS"
OPENAPI_ENV = "BPM_SERVER_OPENAPI"
_OFF = ("0", "false", "no", "off")
MAX_BODY_ENV = "BPM_SERVER_MAX_BODY_BYTES"
MAX_DEPLOYMENT_ENV = "BPM_SERVER_MAX_DEPLOYMENT_BYTES"
MAX_HEADER_ENV = "BPM_SERVER_MAX_HEADER_BYTES"


@dataclass(frozen=True)
class InputLimits:
    """How large a request may be before any of it is read (``bpm_server.input_limits``)."""

    #: A request's body: the largest JSON body bpm takes (variables included).
    body_bytes: int = 1024 * 1024
    #: The body of ``POST /deployment/create``: its BPMN, DMN and other files together.
    deployment_bytes: int = 16 * 1024 * 1024
    #: The request's headers together, and apart from them its path and query.
    header_bytes: int = 16 * 1024

    @classmethod
    def from_env(cls) -> InputLimits:
        default = cls()
        return cls(
            _bytes(MAX_BODY_ENV, default.body_bytes),
            _bytes(MAX_DEPLOYMENT_ENV, default.deployment_bytes),
            _bytes(MAX_HEADER_ENV, default.header_bytes),
        )


def _bytes(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or not 1024 <= int(raw) <= 2**40:
        raise ConfigError(f"{name}={raw[:40]!r} is not a number of bytes from 1024 to 2**40")
    return int(raw)


@dataclass(frozen=True)
class ServerSettings:
    database_url: str
    #: Where it is bound; None when not started by ``bpm serve``.
    bind_host: str | None = None
    #: How long a verified credential is trusted before its row is read again (seconds).
    credential_ttl: float = DEFAULT_TTL
    #: Web origins (``https://tasks.example.com``) whose pages may call with the browser's
    #: stored Basic credentials; see ``bpm_server.browsers``.
    allowed_origins: frozenset[str] = frozenset()
    #: Serve ``/engine-rest/openapi.json`` and ``/engine-rest/docs``. On by default: the
    #: document describes only what the public API documentation describes too, and the
    #: official clients' tests and the fuzz test read it.
    openapi: bool = True
    limits: InputLimits = InputLimits()
    #: One process on a SQLite file, the steps run in the requests (``bpm demo --serve``);
    #: ``bpm serve`` itself needs PostgreSQL.
    demo: bool = False

    @property
    def loopback(self) -> bool:
        return self.bind_host is not None and is_loopback(self.bind_host)

    @classmethod
    def from_env(cls) -> ServerSettings:
        raw = os.environ.get(TTL_ENV, "").strip()
        try:
            ttl = float(raw) if raw else DEFAULT_TTL
        except ValueError:
            raise ConfigError(f"{TTL_ENV}={raw!r} is not a number of seconds") from None
        if not 0 <= ttl <= 300:
            raise ConfigError(f"{TTL_ENV} must be between 0 and 300 seconds")
        return cls(
            database_url(),
            os.environ.get(BIND_HOST_ENV) or None,
            ttl,
            allowed_origins(os.environ.get(ORIGINS_ENV, "")),
            os.environ.get(OPENAPI_ENV, "1").strip().lower() not in _OFF,
            InputLimits.from_env(),
        )


def allowed_origins(raw: str) -> frozenset[str]:
    """``scheme://host[:port]`` entries, comma-separated; anything else is refused by name."""
    found = set()
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        scheme, sep, rest = entry.partition("://")
        if not sep or scheme not in ("http", "https") or not rest or "/" in rest:
            raise ConfigError(
                f"{ORIGINS_ENV}: {entry!r} is not an origin (scheme://host[:port], no path)"
            )
        found.add(entry.lower())
    return frozenset(found)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
