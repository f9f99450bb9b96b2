"""Token state changes, each version-checked and recorded in history in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from uuid import UUID

from bpm.definitions.model import Flow
from bpm.engine.core.tx import NextToken, Tx
from bpm.engine.semantics import scopes
from bpm.states import LinkType, TokenEvent, TokenMode, TokenState
from bpm.store.ids import new_id
from bpm.store.rows import TokenRow


def move(
    tx: Tx,
    tok: TokenRow,
    *,
    state: str,
    event: str,
    node_id: str | None = None,
    via_flow: str | None = None,
    wait_kind: str | None = None,
    waits_for: int | None = None,
    data: dict[str, Any] | None = None,
) -> TokenRow:
    """Change a token under its version and record the transition in history.

    ``waits_for``: parked at a join, how many incoming flows must have a parked token.

    The row is written once, when the transaction flushes, guarded by the version the token
    had when this transaction first moved it; a token passing several nodes in one transaction
    costs one UPDATE. ``Conflict`` (at once or at flush) means someone else changed it first.
    """
    leaving = node_id is not None or state == TokenState.COMPLETED or state == TokenState.CANCELLED
    if leaving and tx.may_have_locals(tok.instance_id):
        # The token leaves its node (or ends there): that scope's local variables end.
        scopes.end(tx, tx.graph_for(tok.instance_id) if tx.graph_for else None, tok)
    node = tok.node_id if node_id is None else node_id
    via = tok.via_flow if via_flow is None and node_id is None else via_flow
    moved = replace(
        tok,
        state=state,
        node_id=node,
        via_flow=via,
        wait_kind=wait_kind,
        waits_for=waits_for,
        version=tok.version + 1,
        updated_at=tx.now,
    )
    tx.stage_token(tok, moved)
    tx.history.token(
        instance_id=tok.instance_id,
        token_id=tok.id,
        at=tx.now,
        type=event,
        node_id=node,
        from_state=tok.state,
        to_state=state,
        actor=tx.actor,
        data=data,
    )
    return moved


def new_token(
    tx: Tx,
    *,
    instance_id: UUID,
    node_id: str,
    parent: UUID | None,
    scope_id: str | None,
    concurrent: bool,
    via_flow: str | None,
    state: str = TokenState.ACTIVE,
    mode: str = TokenMode.FORWARD,
    wait_kind: str | None = None,
    record_id: UUID | None = None,
) -> TokenRow:
    """A token row to insert; ``create`` writes a batch of them with their history."""
    return TokenRow(
        new_id(),
        instance_id,
        node_id,
        state,
        mode,
        parent,
        scope_id,
        concurrent,
        via_flow,
        wait_kind,
        0,
        tx.now,
        tx.now,
        record_id,
    )


def create(tx: Tx, rows: list[TokenRow], links: Sequence[tuple[UUID, UUID, str]]) -> None:
    """Insert new tokens and their links (parent, child, kind), each token with its
    ``CREATED`` row."""
    tx.insert_tokens(rows, links)
    for row in rows:
        tx.history.token(
            instance_id=row.instance_id,
            token_id=row.id,
            at=tx.now,
            type=TokenEvent.CREATED,
            node_id=row.node_id,
            from_state=None,
            to_state=row.state,
            actor=tx.actor,
            data={
                "parent": str(row.parent_token_id) if row.parent_token_id else None,
                "via": row.via_flow,
                "scope": row.scope_id,
                **({"mode": row.mode} if row.mode != TokenMode.FORWARD else {}),
                **({"record_id": str(row.record_id)} if row.record_id else {}),
            },
        )


def spawn_beside(tx: Tx, tok: TokenRow, node_id: str, data: dict[str, Any]) -> TokenRow:
    """A new ACTIVE token at ``node_id`` that runs beside ``tok`` (a non-interrupting
    boundary's path, listeners of an open user task, a compensation ``tok`` does not wait
    for): a sibling under the scope token, or ``tok``'s child when ``tok`` is the scope's own.

    ``tok`` is moved too (same state, next version, a ``SPAWNED`` row with ``data``): a
    transaction that read the scope before this one and then ends it (a terminate, a cancel,
    an error leaving the scope) changes ``tok`` under the version it read, so it conflicts,
    reads again and finds the new token, which then ends with the scope instead of escaping.
    """
    move(tx, tok, state=tok.state, event=TokenEvent.SPAWNED, wait_kind=tok.wait_kind, data=data)
    beside = new_token(
        tx,
        instance_id=tok.instance_id,
        node_id=node_id,
        parent=tok.parent_token_id if tok.concurrent else tok.id,
        scope_id=tok.scope_id,
        concurrent=True,
        via_flow=None,
    )
    create(tx, [beside], [(tok.id, beside.id, LinkType.FORK)])
    return beside


def link(tx: Tx, links: Sequence[tuple[UUID, UUID, str]]) -> None:
    """Links (parent, child, kind) between tokens, for the trace: a link has no history row
    of its own, the moves it goes with (a fork's children created, branches joined) do."""
    tx.insert_tokens([], links)


def take(tx: Tx, tok: TokenRow, flow: Flow, event: str = TokenEvent.MOVED) -> NextToken:
    """Move the token along ``flow`` to its target, ACTIVE there."""
    moved = move(
        tx,
        tok,
        state=TokenState.ACTIVE,
        event=event,
        node_id=flow.target,
        via_flow=flow.id,
        data={"from": flow.source, "flow": flow.id},
    )
    return NextToken(moved.id, moved.version, moved)
