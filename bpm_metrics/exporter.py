"""The metrics port of a process that has no HTTP API (a Celery worker): Prometheus's text
format over HTTP, for callers the API itself would let read.

As on the API, a caller sends an API credential (HTTP Basic, or a bearer token
``<name>.<secret>``) whose role may read (viewer or operator); with no credential configured,
only a port bound to loopback answers without one. A verified credential is trusted for
``ttl`` seconds, so a scrape every few seconds derives its key once a minute; a refused
one is refused for as long without another key derivation (a guessing caller costs one).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import threading
import time
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from bpm.api import Database, Role, credentials
from bpm_metrics.exposition import render

#: Roles whose credential may read the metrics (as ``Permission.READ`` on the API).
READERS = frozenset({Role.VIEWER, Role.OPERATOR})
#: Seconds a verified credential (or the answer "none is configured") is trusted.
TTL = 60.0

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ReaderCheck:
    """Whether an ``Authorization`` header names a credential that may read."""

    def __init__(self, url: str | None, loopback: bool, ttl: float = TTL) -> None:
        self._url, self._loopback, self._ttl = url, loopback, ttl
        self._lock = threading.Lock()
        self._trusted: dict[str, float] = {}
        self._refused: dict[str, float] = {}
        self._open_until = 0.0

    def __call__(self, authorization: str | None) -> bool:
        now = time.monotonic()
        with self._lock:
            if not authorization:
                return self._loopback and self._none_configured(now)
            digest = hashlib.sha256(authorization.encode()).hexdigest()
            if self._trusted.get(digest, 0.0) > now:
                return True
            if self._refused.get(digest, 0.0) > now:
                return False
            verified = self._verify(authorization)
            kept = self._trusted if verified else self._refused
            if len(kept) > 1000:  # old entries: only the last minute's matter
                kept.clear()
            kept[digest] = now + self._ttl
            return verified

    def _none_configured(self, now: float) -> bool:
        if self._open_until > now:
            return True
        db = Database(self._url, pool_size=1)
        try:  # a short connection: this process may fork after the check
            none = credentials.configured(db) == 0
        finally:
            db.dispose()
        if none:
            self._open_until = now + self._ttl
        return none

    def _verify(self, authorization: str) -> bool:
        parts = _name_and_secret(authorization)
        if parts is None:
            return False
        db = Database(self._url, pool_size=1)
        try:
            row = credentials.lookup(db, parts[0])
        finally:
            db.dispose()
        return (
            row is not None
            and Role(row.role) in READERS
            and credentials.verify_secret(parts[1], row.secret_hash)
        )


def _name_and_secret(header: str) -> tuple[str, str] | None:
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() == "bearer":
        return credentials.split_token(value.strip())
    if scheme.lower() != "basic":
        return None
    try:
        name, colon, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (name, secret) if colon and name.isprintable() and secret.isprintable() else None


class MetricsApp:
    """A WSGI app: ``GET /metrics`` for a reader, 401 otherwise."""

    def __init__(self, registry: CollectorRegistry, check: Callable[[str | None], bool]) -> None:
        self._registry, self._check = registry, check

    def __call__(self, environ: dict[str, Any], start: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") not in ("/metrics", "/"):
            start("404 Not Found", [("Content-Type", "text/plain")])
            return [b"the metrics are at /metrics\n"]
        if not self._check(environ.get("HTTP_AUTHORIZATION")):
            start(
                "401 Unauthorized",
                [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Basic realm="bpm"')],
            )
            return [b"the metrics need an API credential that may read (viewer or operator)\n"]
        body = render(self._registry)
        start("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
        return [body]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None  # one line per scrape is noise in a worker's log


def serve(app: MetricsApp, host: str, port: int) -> WSGIServer:
    """Serve ``app`` from a daemon thread; returns the server (``shutdown()`` stops it)."""
    server = make_server(host, port, app, server_class=_Server, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="bpm-metrics", daemon=True).start()
    return server
