"""The cockpit's shape: it reaches the engine only through its facade and the values that
takes and returns (the server's rule), never imports the engine's internals, and no module
of it is over 400 lines."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_server_layout import _imports

ROOT = Path(__file__).resolve().parents[2]
#: What the cockpit may import from bpm: its public face, which exports the facade, its value
#: types, the credentials it logs in with and the states it shows.
ALLOWED = {"bpm.api"}  # the engine's public face (tests/unit/test_public_api.py)


def test_the_cockpit_uses_the_engine_facade_only() -> None:
    for path in (ROOT / "bpm_cockpit").rglob("*.py"):
        names = {n for n in _imports(path, top_level_only=False) if n.split(".")[0] == "bpm"}
        assert names <= ALLOWED, f"{path.relative_to(ROOT)} imports {sorted(names - ALLOWED)}"


def test_no_cockpit_module_is_over_400_lines() -> None:
    for path in (ROOT / "bpm_cockpit").rglob("*.py"):
        lines = len(path.read_text().splitlines())
        assert lines <= 400, f"{path.relative_to(ROOT)} has {lines} lines"


def test_bpm_never_imports_the_cockpit() -> None:
    for path in (ROOT / "bpm").rglob("*.py"):
        names = _imports(path, top_level_only=False)
        assert not {n for n in names if n.split(".")[0] == "bpm_cockpit"}, path
