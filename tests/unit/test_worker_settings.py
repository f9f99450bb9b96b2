"""A worker's settings are checked when it starts, naming the variable: a bound its engine
refused later, inside each job, would have every message taken and refused."""

from __future__ import annotations

import pytest

from bpm.errors import ConfigError
from bpm_workers.config import settings_from_env


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BPM_CHAIN_STEPS", "0"),
        ("BPM_CHAIN_STEPS", "-3"),
        ("BPM_CHAIN_STEPS", "many"),
        ("BPM_CHAIN_SECONDS", "0"),
        ("BPM_CHAIN_SECONDS", "soon"),
    ],
)
def test_a_run_bound_that_allows_nothing_stops_the_worker_at_start(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        settings_from_env()


def test_the_run_bounds_default_to_100_steps_and_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BPM_CHAIN_STEPS", raising=False)
    monkeypatch.delenv("BPM_CHAIN_SECONDS", raising=False)
    settings = settings_from_env()
    assert (settings.chain_steps, settings.chain_seconds) == (100, 1.0)
