"""The execution tree: the one place that answers questions about an instance's shape.

An instance's tokens form a tree through ``parent_token_id``. A token WAITING for CHILDREN is
a scope: the root token of the instance, a subprocess's token (its body's tokens have
``scope_id`` = the subprocess's node id), or a fork's scope token (its concurrent branches).
The paths a scope's own non-interrupting boundary events start hang from the scope's token
too, but they run beside the scope, outside it: their ``scope_id`` is the scope's own.
Everything that asks "what is inside", "who hosts this", "where does a terminate end" asks
this module, so a new kind of scope changes one file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from uuid import UUID

from bpm.engine.core.tx import Tx
from bpm.states import LIVE_TOKEN, TokenState, WaitKind
from bpm.store.rows import TokenRow


class Tree:
    """An instance's tokens as the transaction that read them will leave them."""

    def __init__(self, rows: Iterable[TokenRow]) -> None:
        self.by_id: dict[UUID, TokenRow] = {}
        self._children: dict[UUID | None, list[TokenRow]] = {}
        for row in rows:
            self.by_id[row.id] = row
            self._children.setdefault(row.parent_token_id, []).append(row)

    @classmethod
    def read(cls, tx: Tx, instance_id: UUID) -> Tree:
        """Every token of the instance, this transaction's own moves included."""
        return cls(tx.tokens_of(instance_id))

    def get(self, token_id: UUID | None) -> TokenRow | None:
        return self.by_id.get(token_id) if token_id is not None else None

    def rows(self) -> list[TokenRow]:
        return list(self.by_id.values())

    def children(self, token_id: UUID) -> list[TokenRow]:
        return list(self._children.get(token_id, []))

    def below(
        self, top: TokenRow, keep: Callable[[TokenRow], bool] = lambda child: True
    ) -> list[TokenRow]:
        """Every token under ``top``, through the children ``keep`` accepts at the first
        level (deeper levels all belong to the kept child)."""
        todo = [c for c in self._children.get(top.id, []) if keep(c)]
        out = []
        while todo:
            row = todo.pop()
            out.append(row)
            todo.extend(self._children.get(row.id, []))
        return out

    def inside(self, host: TokenRow) -> list[TokenRow]:
        """The tokens that run inside the subprocess ``host`` waits at: not the paths its
        own non-interrupting boundaries started, which are its children but run outside."""
        return self.below(host, lambda child: in_body(child, host.node_id))

    def covered_by_saga(self, host: TokenRow | None) -> list[TokenRow]:
        """What a saga of ``host``'s subprocess covers; every token when ``host`` is None
        (a global saga)."""
        return self.rows() if host is None else self.inside(host)

    def host_of(self, tok: TokenRow, scope: str) -> TokenRow | None:
        """The token waiting at subprocess ``scope`` above ``tok``."""
        row: TokenRow | None = tok
        while row is not None and row.parent_token_id is not None:
            row = self.by_id.get(row.parent_token_id)
            if row is not None and row.node_id == scope and row.wait_kind == WaitKind.CHILDREN:
                return row
        return None

    def boundaries_of(self, host: TokenRow) -> TokenRow:
        """The token an activity's boundary events sit on: the multi-instance body above
        ``host`` when ``host`` is one of its iterations (``scope_id`` its own node's)."""
        if host.scope_id == host.node_id:
            return self.by_id.get(host.parent_token_id or host.id, host)
        return host

    def descends(self, tok: TokenRow, ancestor: UUID) -> bool:
        """Whether ``ancestor`` is above ``tok``."""
        row: TokenRow | None = tok
        while row is not None and row.parent_token_id is not None:
            if row.parent_token_id == ancestor:
                return True
            row = self.by_id.get(row.parent_token_id)
        return False

    def ran_inside(self, tok: TokenRow | None, scope: str) -> bool:
        """``tok``, or a token it descends from, ran in the body of subprocess ``scope``."""
        while tok is not None:
            if tok.scope_id == scope:
                return True
            tok = self.get(tok.parent_token_id)
        return False

    def scope_root(self, tok: TokenRow) -> TokenRow:
        """The token the paths of ``tok``'s scope hang from: the token itself, a fork's scope
        token, or, for a path a non-interrupting boundary started, the token still working
        at that boundary's activity. The subprocess's host is outside the scope."""
        root = tok
        while root.concurrent and root.parent_token_id is not None:
            parent = self.by_id.get(root.parent_token_id)
            if parent is None or parent.scope_id != tok.scope_id:
                break
            root = parent
        return root

    def latest_visit(self, host: TokenRow, scope: str) -> UUID | None:
        """The token that began the latest run of subprocess ``scope``'s body under
        ``host``: the records made in that run belong to it."""
        body = [t for t in self.children(host.id) if in_body(t, scope)]
        if not body:
            return None
        return max(body, key=lambda t: (t.created_at, str(t.id))).id


def in_body(child: TokenRow, scope: str) -> bool:
    """Whether a child of a subprocess's token runs in its body (not on a path one of the
    subprocess's non-interrupting boundaries started beside it)."""
    return child.scope_id == scope


def body_children(children: Iterable[TokenRow], scope: str) -> list[TokenRow]:
    """The children of subprocess ``scope``'s token that run in its body: the subprocess is
    done when these are."""
    return [c for c in children if in_body(c, scope)]


def live(rows: Iterable[TokenRow]) -> list[TokenRow]:
    return [r for r in rows if r.state in LIVE_TOKEN]


def has_live_children(tx: Tx, tok: TokenRow) -> bool:
    """Whether ``tok`` has live children, counting the moves this transaction made."""
    return bool(tx.live_children(tok.id))


def waits_for_children(tok: TokenRow | None) -> bool:
    """Whether ``tok`` is a scope waiting for its children to decide."""
    return (
        tok is not None and tok.state == TokenState.WAITING and tok.wait_kind == WaitKind.CHILDREN
    )
