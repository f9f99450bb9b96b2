"""The engine's shape: no import cycles inside bpm/engine (counting imports inside functions
and imports for type checking), no module over 400 lines, a facade under 300 lines, and the
node semantics never reaching for the core, the runner or the facade."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "bpm" / "engine"
MAX_MODULE_LINES = 400
MAX_FACADE_LINES = 300


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ENGINE.parent.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ENGINE.rglob("*.py")}


def _imports(path: Path, known: set[str]) -> set[str]:
    """Every engine module ``path`` imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            # ``from bpm.engine.semantics import nodes`` imports the module ``nodes``
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in known and name != "bpm.engine"}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(path, known) for name, path in modules.items()}
    # A package's __init__ is imported with each of its modules; these hold docstrings only.
    for name in graph:
        graph[name].discard(name)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_engine_has_no_import_cycle() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


ROOT = ENGINE.parents[1]
#: Every module of the engine library and of the HTTP server: small modules named for what
#: they hold.
SIZED = sorted(
    str(path.relative_to(ROOT))
    for package in ("bpm", "bpm_server")
    for path in (ROOT / package).rglob("*.py")
)


@pytest.mark.parametrize("name", SIZED)
def test_no_module_is_over_400_lines(name: str) -> None:
    lines = len((ROOT / name).read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines"


def test_the_size_check_sees_every_package() -> None:
    assert "bpm/engine/engine.py" in SIZED and "bpm_server/app.py" in SIZED
    assert "bpm/definitions/parse/graph.py" in SIZED


def test_the_facade_is_small() -> None:
    lines = len((ENGINE / "engine.py").read_text().splitlines())
    assert lines < MAX_FACADE_LINES, f"bpm/engine/engine.py has {lines} lines"


def test_node_semantics_take_a_transaction_not_the_engine() -> None:
    graph = _graph()
    for name, deps in graph.items():
        if name.startswith("bpm.engine.semantics"):
            reaching = {
                d
                for d in deps
                if d.startswith(("bpm.engine.operations", "bpm.engine.jobs"))
                or d in ("bpm.engine.engine", "bpm.engine.core.engine_core")
            }
            assert not reaching, f"{name} imports {sorted(reaching)}"
