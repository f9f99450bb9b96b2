"""Read-only look-ups the engine facade does not offer yet, kept in one place.

They read the store directly; when ``Engine`` grows equivalents (a definition by key, the
instance of a token, instances by id prefix) these should call them instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from bpm.cli.parsing import IdPrefix
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.errors import InvalidOperation, NotFound, TaskNotFound
from bpm.states import TaskKind, TaskState, TokenState
from bpm.store import definitions, instances, tasks, tokens

#: How many of the instances an ambiguous prefix matches are named in the error.
SHOWN_MATCHES = 5


def missing_handlers(rt: EmbeddedRuntime, key: str) -> list[str]:
    """Handlers (of tasks, listeners and call mappings) and beans the latest version of
    ``key`` calls that no imported module registered."""
    with rt.db.transaction() as conn:
        row = definitions.latest(conn, key)
    if row is None:
        return []  # Engine.start reports the unknown key with its own message
    return rt.engine.unregistered(row.id)


def instance_of_token(engine: Engine, token_id: UUID) -> UUID | None:
    with engine.db.transaction() as conn:
        row = tokens.get(conn, token_id)
    return row.instance_id if row else None


def token_of_task(engine: Engine, task_id: UUID) -> UUID:
    with engine.db.transaction() as conn:
        row = tasks.get(conn, task_id)
    if row is None:
        raise TaskNotFound(f"no task has id {task_id}")
    return row.token_id


def resolve_instance(engine: Engine, ref: UUID | IdPrefix) -> UUID:
    """The instance ``ref`` names: a whole id as it is (the engine reports an unknown one), or
    the one instance whose id starts with the prefix.

    The prefix becomes a range of ids (``8a9e554a`` covers ``8a9e554a-0000-…`` to
    ``8a9e554a-ffff-…``), which both databases order as the hex text, so the primary key index
    answers it however many instances there are.
    """
    if isinstance(ref, UUID):
        return ref
    digits = ref.digits
    low, high = UUID(digits.ljust(32, "0")), UUID(digits.ljust(32, "f"))
    with engine.db.transaction() as conn:
        found, count = instances.ids_between(conn, low, high, SHOWN_MATCHES)
    if not found:
        raise NotFound(f"no instance id starts with {ref.text!r}")
    if count > 1:
        named = ", ".join(str(i) for i in found) + (", …" if count > len(found) else "")
        raise InvalidOperation(
            f"{count} instances have an id that starts with {ref.text!r} "
            f"({named}); give more of the id"
        )
    return found[0]


@dataclass(frozen=True)
class RetriedHandler:
    """The handler a retry of a failed token would run, and where."""

    token_id: UUID
    node_id: str
    handler: str


def handler_of_retry(engine: Engine, token_or_task: UUID) -> RetriedHandler | None:
    """The handler ``Engine.retry(token_or_task)`` would run next, found as the engine finds
    it (the token by its id, else the token of the task with that id; its FAILED handler
    task). None when a retry runs no handler (an external task, a gateway) or is refused
    anyway (no such id, a token that is not FAILED): the engine says why with its own message.
    """
    with engine.db.transaction() as conn:
        tok = tokens.get(conn, token_or_task)
        if tok is None:
            task = tasks.get(conn, token_or_task)
            tok = tokens.get(conn, task.token_id) if task else None
        if tok is None or tok.state != TokenState.FAILED:
            return None
        failed = tasks.open_of_token(conn, tok.id)
    if failed is None or failed.state != TaskState.FAILED or failed.kind != TaskKind.HANDLER:
        return None
    if not failed.handler:
        return None
    return RetriedHandler(tok.id, tok.node_id, failed.handler)
