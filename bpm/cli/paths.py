"""The path each token took, rebuilt from an instance's trace, drawn as a tree.

Only history is read (token ``CREATED``/``MOVED`` events give the nodes, task events the
attempts), so the picture shows what happened, not what the definition allows. Children of a
fork or a subprocess are drawn under the node that spawned them; the parent's path resumes on
a line starting with an arrow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bpm.cli.render import Glyphs
from bpm.history_reading import HistoryEvent, HistoryTable
from bpm.states import TaskEvent, TokenEvent


@dataclass
class Step:
    """One visit of a token at a node."""

    node_id: str
    attempts: int = 1
    failed: bool = False
    errors: list[str] = field(default_factory=list)

    def label(self, g: Glyphs) -> str:
        text = self.node_id
        if self.attempts > 1:
            text += f" (attempt {self.attempts})"
        return f"{text} {g.cross}" if self.failed else text


@dataclass
class TokenPath:
    """A token's visits in order, with groups of child tokens between them."""

    token_id: str
    items: list[Step | list[str]] = field(default_factory=list)

    def last_step(self) -> Step | None:
        steps = [i for i in self.items if isinstance(i, Step)]
        return steps[-1] if steps else None


@dataclass
class PathTree:
    roots: list[str] = field(default_factory=list)
    tokens: dict[str, TokenPath] = field(default_factory=dict)

    def steps(self) -> Iterable[Step]:
        for path in self.tokens.values():
            yield from (i for i in path.items if isinstance(i, Step))


@dataclass
class _TaskInfo:
    token_id: str
    node_id: str
    attempts: int = 1
    errors: list[str] = field(default_factory=list)


def build(events: Iterable[Mapping[str, Any]]) -> PathTree:
    """Fold trace events (as ``Engine.trace`` returns them) into per-token paths.

    Task events are matched to visits afterwards, by token and node (the k-th task of a token
    at a node belongs to its k-th visit there): events written in one transaction may come back
    in any order across the history tables, so "the token's latest step" is not reliable.
    """
    tree = PathTree()
    found: dict[str, _TaskInfo] = {}
    for view in events:
        event = HistoryEvent.of_view(view)
        token_id = event.token_id
        if not token_id:
            continue
        if event.table is HistoryTable.TASK and event.task_id:
            _task_event(found, token_id, event)
        elif event.is_token:
            _token_event(tree, token_id, event)
    _attach(tree, found.values())
    return tree


def _token_event(tree: PathTree, token_id: str, event: HistoryEvent) -> None:
    data = event.data
    kind, node_id = event.type, event.node_id or "?"
    if kind == TokenEvent.CREATED:
        tree.tokens[token_id] = TokenPath(token_id, [Step(node_id)])
        parent = tree.tokens.get(data.get("parent") or "")
        if parent is None:
            tree.roots.append(token_id)
        elif parent.items and isinstance(parent.items[-1], list):
            parent.items[-1].append(token_id)
        else:
            parent.items.append([token_id])
        return
    path = tree.tokens.get(token_id)
    if path is None:
        return
    last = path.last_step()
    if kind == TokenEvent.MOVED:
        origin = data.get("from")
        if origin and (last is None or last.node_id != origin):
            path.items.append(Step(origin))  # e.g. the scope token resuming past a join
        path.items.append(Step(node_id))
    elif kind == TokenEvent.FAILED and last is not None:
        last.failed = True
    elif kind == TokenEvent.RETRIED and last is not None:
        last.failed = False


def _task_event(found: dict[str, _TaskInfo], token_id: str, event: HistoryEvent) -> None:
    task_id = str(event.task_id)
    info = found.setdefault(task_id, _TaskInfo(token_id, str(event.node_id)))
    data = event.data
    if event.type == TaskEvent.LOCKED and not data.get("reserved"):
        info.attempts = max(info.attempts, int(data.get("attempt") or 1))
    elif event.type == TaskEvent.LOCK_EXTENDED and "attempt" in data:  # a reserved run began
        info.attempts = max(info.attempts, int(data["attempt"]))
    elif event.type == TaskEvent.FAILED and data.get("error"):
        info.errors.append(f"attempt {data.get('attempt', '?')}: {data['error']}")


def _attach(tree: PathTree, found: Iterable[_TaskInfo]) -> None:
    queues: dict[tuple[str, str], list[_TaskInfo]] = {}
    for info in found:
        queues.setdefault((info.token_id, info.node_id), []).append(info)
    for path in tree.tokens.values():
        for step in (i for i in path.items if isinstance(i, Step)):
            queue = queues.get((path.token_id, step.node_id))
            if queue:
                info = queue.pop(0)
                step.attempts, step.errors = info.attempts, info.errors


def render(tree: PathTree, g: Glyphs) -> list[str]:
    """Lines of the tree, one root after the other (an instance has one root token)."""
    out: list[str] = []
    for root in tree.roots:
        out.extend(_render_token(tree, root, g))
    return out


def _render_token(tree: PathTree, token_id: str, g: Glyphs) -> list[str]:
    lines: list[str] = []
    segment: list[str] = []
    for item in tree.tokens[token_id].items:
        if isinstance(item, Step):
            segment.append(item.label(g))
            continue
        _flush(lines, segment, g)
        for n, child in enumerate(item):
            last = n == len(item) - 1
            child_lines = _render_token(tree, child, g)
            lines.append((g.last if last else g.branch) + child_lines[0])
            lines.extend(("   " if last else g.pipe) + text for text in child_lines[1:])
    _flush(lines, segment, g)
    return lines


def _flush(lines: list[str], segment: list[str], g: Glyphs) -> None:
    if segment:
        text = f" {g.arrow} ".join(segment)
        lines.append(f"{g.arrow} {text}" if lines else text)
        segment.clear()
