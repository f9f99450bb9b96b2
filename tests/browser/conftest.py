"""The cockpit in a real headless Chromium (Debian's ``chromium``, driven by Playwright)
against a real ``bpm serve`` process on PostgreSQL (the server tests' ``server`` fixture),
whose handlers run in the server when an operator retries. Screenshots go to
``build/screenshots/<test>.png``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.states import Role
from tests.browser import processes
from tests.server.conftest import Server, server

__all__ = ["server"]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "build" / "screenshots"
CHROMIUM = os.environ.get("BPM_TEST_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]


@pytest.fixture(scope="module", autouse=True)
def server_imports_the_handlers() -> Iterator[None]:
    """The server process runs the flaky charge when an operator retries it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BPM_IMPORTS", processes.__name__)
        patch.setenv("BPM_SESSION_SECRET", "browser-tests-session-secret")
        yield


@pytest.fixture(scope="module")
def cockpit(server: Server) -> Server:
    """The server with the test processes deployed and one credential per role."""
    processes.deploy(server.runtime)
    server.add("ops", Role.OPERATOR)
    server.add("viewer", Role.VIEWER)
    server.add("clerk", Role.STARTER)
    server.add("shipper", Role.STARTER, processes=(processes.SHIP,))
    # A desk credential acting as user anna of the group reviewers.
    now = SYSTEM_CLOCK.now()
    server.secrets["desk"] = credentials.add(
        server.db, "desk", Role.STARTER, now, user="anna", groups=["reviewers"]
    )
    return server


def _missing(reason: str) -> None:
    """Skip, except in CI (``BPM_TEST_REQUIRE_BROWSER=1``, set by .ci/run): there it fails."""
    if os.environ.get("BPM_TEST_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        _missing(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    if sync_playwright is None:
        _missing("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh browser context (no cookies) per test; its last screen is saved."""
    context = browser.new_context()
    context.set_default_timeout(20_000)
    opened = context.new_page()
    try:
        yield opened
    finally:
        SHOTS.mkdir(parents=True, exist_ok=True)
        opened.screenshot(path=str(SHOTS / f"{request.node.name}.png"), full_page=True)
        context.close()


def base_of(srv: Server) -> str:
    return srv.base.removesuffix("/engine-rest") + "/cockpit"


def log_in(page: Page, srv: Server, name: str) -> None:
    page.goto(base_of(srv) + "/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=secret]", srv.secrets[name])
    page.click("#login")
    page.wait_for_selector("header .who")


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
