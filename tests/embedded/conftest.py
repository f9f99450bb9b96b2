"""The embedded runtime on a fresh SQLite file per test, with the suite's handlers and fake
clock (a test module that needs another database defines its own ``embedded``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bpm.embedded import EmbeddedRuntime
from bpm.handlers import HandlerRegistry
from tests.helpers.clock import FakeClock


@pytest.fixture
def embedded(
    tmp_path: Path, handlers: HandlerRegistry, clock: FakeClock
) -> Iterator[EmbeddedRuntime]:
    rt = EmbeddedRuntime(f"sqlite:///{tmp_path / 'bpm.db'}", handlers=handlers, clock=clock)
    try:
        yield rt
    finally:
        rt.close()
