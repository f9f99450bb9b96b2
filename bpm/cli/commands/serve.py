"""``bpm serve``: the HTTP API (Camunda 7's REST API, docs/http-api.md) in uvicorn.

The server package and its HTTP framework are an extra (``pip install 'bpm[server]'``) and are
imported only here, so the rest of ``bpm`` runs without them. Stateless: start as many servers
as you like against one database; they share credentials and tasks through it.
"""

from __future__ import annotations

import logging
import os

import click

from bpm import credentials
from bpm.errors import ConfigError
from bpm.store import Database

log = logging.getLogger("bpm.server")


@click.command("serve")
@click.option(
    "--host",
    default=lambda: os.environ.get("BPM_SERVER_HOST", "127.0.0.1"),
    show_default="127.0.0.1, or BPM_SERVER_HOST",
    help="Address to bind.",
)
@click.option(
    "--port",
    type=int,
    default=lambda: int(os.environ.get("BPM_SERVER_PORT", "8080")),
    show_default="8080, or BPM_SERVER_PORT",
    help="Port to bind.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=lambda: int(os.environ.get("BPM_SERVER_WORKERS", "1")),
    show_default="1, or BPM_SERVER_WORKERS",
    help="Server processes.",
)
@click.option(
    "--access-log/--no-access-log",
    default=lambda: os.environ.get("BPM_SERVER_ACCESS_LOG", "1") not in ("0", "false", "no"),
    show_default="on, or BPM_SERVER_ACCESS_LOG=0 for off",
    help="A log line per request (refused calls and faults are logged either way).",
)
@click.option(
    "--certfile",
    type=click.Path(exists=True, dir_okay=False),
    default=lambda: os.environ.get("BPM_SERVER_CERTFILE") or None,
    show_default="none, or BPM_SERVER_CERTFILE",
    help="Serve HTTPS with this PEM certificate (chain); needs --keyfile.",
)
@click.option(
    "--keyfile",
    type=click.Path(exists=True, dir_okay=False),
    default=lambda: os.environ.get("BPM_SERVER_KEYFILE") or None,
    show_default="none, or BPM_SERVER_KEYFILE",
    help="The PEM private key of --certfile.",
)
@click.option(
    "--forwarded-allow-ips",
    default=lambda: os.environ.get("BPM_SERVER_FORWARDED_ALLOW_IPS") or None,
    show_default="none, or BPM_SERVER_FORWARDED_ALLOW_IPS",
    help="Addresses of the proxies (comma-separated) whose X-Forwarded-For and"
    " X-Forwarded-Proto are believed: logs then name the client, not the proxy.",
)
def serve(
    host: str,
    port: int,
    workers: int,
    access_log: bool,
    certfile: str | None,
    keyfile: str | None,
    forwarded_allow_ips: str | None,
) -> None:
    """Serve the REST API under /engine-rest on BPM_DATABASE_URL until SIGTERM or Ctrl-C.

    With no credential configured (bpm credentials add), it serves loopback only, openly.
    """
    try:
        import uvicorn

        from bpm_server.log_config import FORMAT, log_config
        from bpm_server.settings import BIND_HOST_ENV, ServerSettings, is_loopback
    except ImportError as exc:
        raise ConfigError(
            f"bpm serve needs the 'server' extra: pip install 'bpm[server]' ({exc})"
        ) from exc
    if (certfile is None) != (keyfile is None):
        raise ConfigError("--certfile and --keyfile go together: HTTPS needs both")
    ServerSettings.from_env()  # a wrong setting stops here, not in every server process
    db = Database()
    try:
        db.check_reachable()
        configured = credentials.configured(db)
    finally:
        db.dispose()
    if configured == 0 and not is_loopback(host):
        raise ConfigError(
            f"no API credential is configured, so bpm serve binds to loopback only, not {host}:"
            " add one with `bpm credentials add NAME --role ROLE`, or use --host 127.0.0.1"
        )
    if configured == 0 and forwarded_allow_ips:
        raise ConfigError(
            "no API credential is configured, so bpm serve takes no --forwarded-allow-ips:"
            " a proxy in front would open the API to every caller of the proxy; add one with"
            " `bpm credentials add NAME --role ROLE` first"
        )
    logging.getLogger("bpm.server").setLevel(logging.INFO)
    logging.basicConfig(level=logging.INFO, force=True, format=FORMAT)
    if configured == 0:
        log.warning("no API credential is configured: serving %s without authentication", host)
    os.environ[BIND_HOST_ENV] = host  # the worker processes read it: open only on loopback
    uvicorn.run(
        "bpm_server.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
        # Without it the client address in the logs is the proxy's, and no header a caller
        # sends can change it.
        proxy_headers=forwarded_allow_ips is not None,
        forwarded_allow_ips=forwarded_allow_ips,
        log_config=log_config(),  # applied in every worker process, not only this one
        access_log=access_log,
        timeout_graceful_shutdown=5,
    )
