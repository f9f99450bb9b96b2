"""Token rows and their links: the anchor of every transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    distinct,
    exists,
    func,
    or_,
    select,
    text,
)

from bpm.states import (
    ENDED_INSTANCE,
    LIVE_INSTANCE,
    EngineEvent,
    IncidentState,
    InstanceState,
    LinkType,
    TokenMode,
    TokenState,
    WaitKind,
)
from bpm.store import instances
from bpm.store.db import pg_sql, raw_all, raw_one
from bpm.store.rows import TokenRow, from_row
from bpm.store.schema import (
    compensation_records,
    engine_events,
    incidents,
    process_instances,
    token_links,
)
from bpm.store.schema import tokens as t

LIVE = (TokenState.ACTIVE, TokenState.WAITING, TokenState.FAILED)

_COLS = (
    t.c.id,
    t.c.instance_id,
    t.c.node_id,
    t.c.state,
    t.c.mode,
    t.c.parent_token_id,
    t.c.scope_id,
    t.c.concurrent,
    t.c.via_flow,
    t.c.wait_kind,
    t.c.version,
    t.c.created_at,
    t.c.updated_at,
    t.c.record_id,
    t.c.waits_for,
)
#: Column order of ``TokenRow`` (for queries that read a token next to other rows).
COLUMNS = _COLS
_BY_ID = select(*_COLS).where(t.c.id == bindparam("id"))
_INSTANCE = instances.locked_first(bindparam("instance_id"))
# FOR NO KEY UPDATE: creating child tokens that reference the parent (FOR KEY SHARE) goes on.
_LOCK_AFTER_INSTANCE = _BY_ID.where(exists(select(_INSTANCE.c.id))).with_for_update(key_share=True)
#: The incident kind a call activity's token gets (``bpm.engine.semantics.calls.INCIDENT``;
#: the store does not import the engine).
CALL_INCIDENT = "call-activity"
#: As tuples: they are sent to the database as arrays.
ENDED_INSTANCE_STATES = tuple(sorted(ENDED_INSTANCE))
LIVE_INSTANCE_STATES = tuple(sorted(LIVE_INSTANCE))

_LIVE_CHILDREN = (
    select(*_COLS)
    .where(t.c.parent_token_id == bindparam("id"), t.c.state.in_(LIVE))
    .order_by(t.c.created_at, t.c.id)
)
_LOCK_AFTER_INSTANCE_PG = pg_sql(_LOCK_AFTER_INSTANCE)
_BY_ID_PG = pg_sql(_BY_ID)
#: The live states as literals, so that the partial index of live children serves it.
_LIVE_CHILDREN_PG = pg_sql(
    select(*_COLS)
    .where(
        t.c.parent_token_id == bindparam("id"),
        text(f"tokens.state IN ({', '.join(repr(str(s)) for s in LIVE)})"),
    )
    .order_by(t.c.created_at, t.c.id)
)
#: The token first, then its live children oldest first, as the function returns them.
_LOCK_WITH_CHILDREN_PG = (
    f"SELECT {','.join('f.' + str(c.name) for c in _COLS)} "
    "FROM bpm_lock_with_children(%(id)s::uuid, %(instance_id)s::uuid) "
    "WITH ORDINALITY AS f ORDER BY f.ordinality"
)
_OF_INSTANCE = select(*_COLS).where(t.c.instance_id == bindparam("id")).order_by(t.c.created_at)
_MOVE = (
    t.update()
    .where(t.c.id == bindparam("b_id"), t.c.version == bindparam("b_version"))
    .values(
        state=bindparam("state"),
        node_id=bindparam("node_id"),
        via_flow=bindparam("via_flow"),
        wait_kind=bindparam("wait_kind"),
        waits_for=bindparam("waits_for"),
        version=bindparam("new_version"),
        updated_at=bindparam("now"),
    )
)


def get(conn: Connection, token_id: UUID) -> TokenRow | None:
    if conn.dialect.name == "postgresql":  # every job's first read: straight to the driver
        found = raw_one(conn, _BY_ID_PG, {"id": token_id})
        return TokenRow(*found) if found is not None else None
    row = conn.execute(_BY_ID, {"id": token_id}).first()
    return from_row(TokenRow, row) if row else None


def lock(conn: Connection, token_id: UUID, instance_id: UUID) -> TokenRow | None:
    """The token row, locked for this transaction; on PostgreSQL its instance's row is
    locked first, by the same statement (SQLite's writers take turns at the database)."""
    params = {"id": token_id, "instance_id": instance_id}
    if conn.dialect.name == "postgresql":  # a scope's every decision: straight to the driver
        locked = raw_one(conn, _LOCK_AFTER_INSTANCE_PG, params)
        return TokenRow(*locked) if locked is not None else None
    row = conn.execute(_BY_ID, params).first()
    return from_row(TokenRow, row) if row else None


def live_children(conn: Connection, parent_id: UUID) -> list[TokenRow]:
    if conn.dialect.name == "postgresql":
        return [TokenRow(*row) for row in raw_all(conn, _LIVE_CHILDREN_PG, {"id": parent_id})]
    return [from_row(TokenRow, row) for row in conn.execute(_LIVE_CHILDREN, {"id": parent_id})]


def lock_with_children(
    conn: Connection, token_id: UUID, instance_id: UUID
) -> tuple[TokenRow | None, list[TokenRow]]:
    """``lock`` and then ``live_children`` of the same token (a scope deciding about its
    branches). The read must begin once the lock is held: a plain statement that waited for
    the lock would read the children as they were when it began, and miss a sibling that
    committed meanwhile. On PostgreSQL one round trip, a function whose statements each take
    a fresh snapshot (migration 0027)."""
    if conn.dialect.name == "postgresql":
        params = {"id": token_id, "instance_id": instance_id}
        found = [TokenRow(*row) for row in raw_all(conn, _LOCK_WITH_CHILDREN_PG, params)]
        return (found[0], found[1:]) if found and found[0].id == token_id else (None, [])
    locked = lock(conn, token_id, instance_id)
    return (locked, live_children(conn, token_id)) if locked is not None else (None, [])


def of_instance(conn: Connection, instance_id: UUID) -> list[TokenRow]:
    return [from_row(TokenRow, row) for row in conn.execute(_OF_INSTANCE, {"id": instance_id})]


def compensating(conn: Connection, instance_id: UUID, record_id: UUID) -> TokenRow | None:
    """The instance's compensation token WAITING to carry out the record, if any."""
    for row in of_instance(conn, instance_id):
        if row.record_id == record_id and row.state == TokenState.WAITING:
            return row
    return None


def forked_from(conn: Connection, child_id: UUID) -> UUID | None:
    """The token ``child_id`` was spawned beside (its ``FORK`` link), if any."""
    stmt = select(token_links.c.parent_token_id).where(
        token_links.c.child_token_id == child_id, token_links.c.link_type == LinkType.FORK
    )
    return conn.execute(stmt.limit(1)).scalar()


def move(conn: Connection, expected_version: int, row: TokenRow) -> bool:
    """Write ``row`` over the token if it is still at ``expected_version``.

    ``row.version`` is the expected version plus the number of transitions the transaction
    made, so the version always counts the token's history rows.
    """
    result = conn.execute(
        _MOVE,
        {
            "b_id": row.id,
            "b_version": expected_version,
            "state": row.state,
            "node_id": row.node_id,
            "via_flow": row.via_flow,
            "wait_kind": row.wait_kind,
            "waits_for": row.waits_for,
            "new_version": row.version,
            "now": row.updated_at,
        },
    )
    return result.rowcount == 1


def _not_nudged_since(before: datetime) -> ColumnElement[bool]:
    """A row a scan re-sent a job for is not re-sent again within the grace period: while a
    backlog holds that job in its queue, sending it again every scan would only grow it."""
    return or_(t.c.nudged_at.is_(None), t.c.nudged_at < before)


def _nudged(
    conn: Connection, found: list[tuple[UUID, int]], now: datetime
) -> list[tuple[UUID, int]]:
    if found:
        conn.execute(t.update().where(t.c.id.in_([i for i, _ in found])).values(nudged_at=now))
    return found


def stalled_active(
    conn: Connection, before: datetime, limit: int, now: datetime
) -> list[tuple[UUID, int]]:
    """ACTIVE tokens untouched since ``before`` (and not re-sent since): marked re-sent."""
    stmt = (
        select(t.c.id, t.c.version)
        .where(t.c.state == TokenState.ACTIVE, t.c.updated_at < before, _not_nudged_since(before))
        .order_by(t.c.updated_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return _nudged(conn, [(row.id, row.version) for row in conn.execute(stmt)], now)


def parents_to_recheck(
    conn: Connection, before: datetime, limit: int, now: datetime
) -> list[tuple[UUID, int]]:
    """WAITING parents whose children are all done, or that have a child parked at a join, and
    saga anchors whose current compensation has ended (their nudge may have been lost)."""
    child = t.alias("child")
    no_live_child = ~exists().where(child.c.parent_token_id == t.c.id, child.c.state.in_(LIVE))
    # A child parked at a join whose every incoming flow has a parked token: the join can
    # fire. One that still waits for a sibling at work is left alone (that sibling nudges
    # the parent when it arrives); a row parked before ``waits_for`` existed counts as ready.
    sibling = t.alias("sibling")
    parked_flows = (
        select(func.count(distinct(sibling.c.via_flow)))
        .where(
            sibling.c.parent_token_id == t.c.id,
            sibling.c.node_id == child.c.node_id,
            sibling.c.state == TokenState.WAITING,
            sibling.c.wait_kind == WaitKind.JOIN,
        )
        .scalar_subquery()
    )
    joined_child = exists().where(
        and_(
            child.c.parent_token_id == t.c.id,
            child.c.state == TokenState.WAITING,
            child.c.wait_kind == WaitKind.JOIN,
            child.c.updated_at < before,
            or_(child.c.waits_for.is_(None), parked_flows >= child.c.waits_for),
        )
    )
    # A parent with a FAILED branch waits for an operator, whose retry nudges it again;
    # re-checking it every scan would only crowd out the parents that can move.
    failed_child = exists().where(
        child.c.parent_token_id == t.c.id, child.c.state == TokenState.FAILED
    )
    # A saga's anchor goes on after a failed compensation too: only a running one holds it.
    running_child = exists().where(
        child.c.parent_token_id == t.c.id,
        child.c.state.in_((TokenState.ACTIVE, TokenState.WAITING)),
    )
    scope_parent = (t.c.wait_kind == WaitKind.CHILDREN) & (
        no_live_child | (joined_child & ~failed_child)
    )
    saga_anchor = (t.c.wait_kind == WaitKind.COMPENSATING) & ~running_child
    # A call activity whose called instance ended (its nudge may have been lost).
    called = process_instances.alias("called")
    call_returned = (
        (t.c.wait_kind == WaitKind.CALLED)
        & exists().where(
            called.c.super_token_id == t.c.id, called.c.state.in_(ENDED_INSTANCE_STATES)
        )
        & ~exists().where(
            called.c.super_token_id == t.c.id, called.c.state.in_(LIVE_INSTANCE_STATES)
        )
    )
    # A call activity whose called instance failed without an incident on the caller yet,
    # or runs again while the caller's still is open (the mirrored incident, ``call_returns``).
    mirrored = exists().where(
        incidents.c.token_id == t.c.id,
        incidents.c.state == IncidentState.OPEN,
        incidents.c.kind == CALL_INCIDENT,
    )
    failed_call = exists().where(
        called.c.super_token_id == t.c.id, called.c.state == InstanceState.FAILED
    )
    call_incident_stale = (t.c.wait_kind == WaitKind.CALLED) & (
        (failed_call & ~mirrored) | (~failed_call & mirrored)
    )

    # A call activity whose running called instance sent up an escalation it has not taken
    # (``called_escalations``: one receipt per propagated escalation).
    def _count(kind: str) -> Any:
        ev = engine_events
        return (
            select(func.count())
            .where(ev.c.instance_id == called.c.id, ev.c.type == kind)
            .scalar_subquery()
        )

    escalated_call = (t.c.wait_kind == WaitKind.CALLED) & exists().where(
        called.c.super_token_id == t.c.id,
        called.c.state.in_(LIVE_INSTANCE_STATES),
        _count(EngineEvent.ESCALATION_PROPAGATED) > _count(EngineEvent.ESCALATION_RECEIVED),
    )
    # A caller's compensation token whose called instance has undone its records and ended
    # again (``called_compensation``: the instance is named by the token's record).
    record = compensation_records.alias("record")
    undone_call = (
        (t.c.wait_kind == WaitKind.CALLED)
        & (t.c.mode == TokenMode.COMPENSATION)
        & exists().where(
            record.c.id == t.c.record_id,
            called.c.id == record.c.called_instance_id,
            called.c.state.in_(ENDED_INSTANCE_STATES),
        )
    )
    stmt = (
        select(t.c.id, t.c.version)
        .where(
            t.c.state == TokenState.WAITING,
            t.c.updated_at < before,
            _not_nudged_since(before),
            scope_parent
            | saga_anchor
            | call_returned
            | call_incident_stale
            | undone_call
            | escalated_call,
        )
        .order_by(t.c.updated_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return _nudged(conn, [(row.id, row.version) for row in conn.execute(stmt)], now)


def as_dict(token: TokenRow) -> dict[str, Any]:
    return {
        "id": str(token.id),
        "node_id": token.node_id,
        "state": token.state,
        "mode": token.mode,
        "parent_token_id": str(token.parent_token_id) if token.parent_token_id else None,
        "scope_id": token.scope_id,
        "wait_kind": token.wait_kind,
        "version": token.version,
    }
