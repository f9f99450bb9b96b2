"""Live instances as the Camunda-compatible API reads them: searches, one instance while it
runs, its variables, and where its tokens are as a tree of activity instances."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from bpm.definitions.model import SCOPES, Node
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.semantics import multi_instance
from bpm.errors import InvalidOperation, NotFound
from bpm.states import LIVE_INSTANCE, LIVE_TOKEN, TokenState, WaitKind
from bpm.store import instance_queries, instances, tokens, variables
from bpm.store.instance_queries import LiveInstanceQuery
from bpm.store.paging import Page
from bpm.store.rows import InstanceRow, TokenRow

#: Camunda's activity id suffix and activity type of a multi-instance body.
BODY = "#multiInstanceBody"
BODY_TYPE = "multiInstanceBody"


@dataclass
class ActivityNode:
    """A token at an activity (``transition``: on its way, not yet in a wait state); a
    subprocess's token holds the tokens inside it as ``children``."""

    token_id: UUID
    node_id: str
    node_name: str | None
    node_type: str
    transition: bool
    #: A scope's token (``Node.is_scope``): the tokens under it are its ``children``.
    is_scope: bool = False
    children: list[ActivityNode] = field(default_factory=list)


@dataclass(frozen=True)
class ActivityTree:
    instance: InstanceRow
    children: list[ActivityNode]


def _check_filter(core: EngineCore, f: LiveInstanceQuery) -> None:
    if f.variables and not core.db.is_postgres:
        raise InvalidOperation("variable conditions in an instance search need PostgreSQL")


def find(core: EngineCore, f: LiveInstanceQuery, page: Page) -> list[InstanceRow]:
    _check_filter(core, f)
    with core.db.transaction() as conn:
        return instance_queries.find(conn, f, page)


def count(core: EngineCore, f: LiveInstanceQuery) -> int:
    _check_filter(core, f)
    with core.db.transaction() as conn:
        return instance_queries.count(conn, f)


def live(core: EngineCore, instance_id: UUID) -> InstanceRow:
    """A running or failed instance; ``NotFound`` once it has ended, as in Camunda."""
    with core.db.transaction() as conn:
        row = instances.get(conn, instance_id)
    if row is None or row.state not in LIVE_INSTANCE:
        what = "does not exist" if row is None else f"has ended ({row.state})"
        raise NotFound(f"process instance {instance_id} {what}")
    return row


def live_variables(core: EngineCore, instance_id: UUID) -> dict[str, object]:
    """The instance's own variables (not the local ones of its scopes) while it is live."""
    live(core, instance_id)
    with core.db.transaction() as conn:
        return variables.load(conn, instance_id)


def activity_tree(core: EngineCore, instance_id: UUID) -> ActivityTree:
    inst = live(core, instance_id)
    with core.db.transaction() as conn:
        rows = tokens.of_instance(conn, instance_id)
        graph = core.graph(inst.process_def_id, conn)
    by_id = {t.id: t for t in rows}
    nodes: dict[UUID, ActivityNode] = {}
    for tok in rows:
        if tok.state not in LIVE_TOKEN or _structural(tok, graph.node(tok.node_id)):
            continue
        node = graph.node(tok.node_id)
        transition = tok.state == TokenState.ACTIVE
        nodes[tok.id] = _activity(tok, node, transition)
    roots: list[ActivityNode] = []
    for tok in sorted((by_id[i] for i in nodes), key=lambda t: (t.created_at, str(t.id))):
        scope = _scope_of(tok, by_id, nodes)
        (nodes[scope].children if scope is not None else roots).append(nodes[tok.id])
    return ActivityTree(inst, roots)


def _activity(tok: TokenRow, node: Node, transition: bool) -> ActivityNode:
    """A multi-instance body is Camunda's ``<id>#multiInstanceBody``, holding one activity
    instance per live iteration; an iteration is the activity itself (a scope only when the
    activity is a subprocess)."""
    if node.multi_instance is None:  # a transaction is Camunda's activity type of its own
        kind = "transaction" if node.transaction else node.type
        return ActivityNode(tok.id, node.id, node.name, kind, transition, node.is_scope)
    if not multi_instance.is_iteration(tok):
        body = f"{node.id}{BODY}"
        return ActivityNode(tok.id, body, node.name, BODY_TYPE, transition, True)
    return ActivityNode(tok.id, node.id, node.name, node.type, transition, node.type in SCOPES)


def _structural(tok: TokenRow, node: Node) -> bool:
    """A token that only holds others (a fork's, a join's, a scope end's) is no activity."""
    return tok.wait_kind == WaitKind.CHILDREN and not node.is_scope


def _scope_of(
    tok: TokenRow, by_id: dict[UUID, TokenRow], nodes: dict[UUID, ActivityNode]
) -> UUID | None:
    """The nearest ancestor token that is a subprocess's activity instance."""
    parent = tok.parent_token_id
    seen: set[UUID] = set()
    while parent is not None and parent not in seen:
        seen.add(parent)
        above = by_id.get(parent)
        if above is None:
            return None
        if parent in nodes and nodes[parent].is_scope:
            return parent
        parent = above.parent_token_id
    return None
