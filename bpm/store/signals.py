"""Signal broadcasts: each definition's subscriptions, the throws, and their deliveries not
made yet (``schema_signals``). A throw snapshots its recipients with one statement per kind
in the throwing transaction; a delivery batch claims rows ``FOR UPDATE SKIP LOCKED`` and
deletes them in the transaction that delivers them, so each is made once."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Uuid, and_, false, func, literal, or_, select

from bpm.states import InstanceState, SignalTarget, TokenState
from bpm.store.schema import definition_signal_subscriptions as subs
from bpm.store.schema import process_definitions as pd
from bpm.store.schema import process_instances as pi
from bpm.store.schema import signal_deliveries as d
from bpm.store.schema import signals as s
from bpm.store.schema import tokens as t

_LIVE = (TokenState.ACTIVE.value, TokenState.WAITING.value, TokenState.FAILED.value)
_RUNNING = (InstanceState.RUNNING.value, InstanceState.FAILED.value)


@dataclass(frozen=True)
class Delivery:
    target: UUID
    kind: SignalTarget
    token_version: int | None
    instance_id: UUID | None
    node_id: str | None


@dataclass(frozen=True)
class SignalRow:
    id: UUID
    name: str
    variables: dict[str, Any] | None
    instance_id: UUID | None
    finished_at: datetime | None


def record(
    conn: Connection, definition_id: UUID, found: Sequence[tuple[str, str, SignalTarget]]
) -> None:
    """A new definition's signal subscriptions (``bpm.definitions.signals``)."""
    if found:
        conn.execute(
            subs.insert(),
            [
                {"definition_id": definition_id, "signal": n, "node_id": i, "target": k.value}
                for n, i, k in found
            ],
        )


def forget(conn: Connection, definition_ids: list[UUID]) -> None:
    if definition_ids:
        conn.execute(subs.delete().where(subs.c.definition_id.in_(definition_ids)))


def by_key(conn: Connection, throw_key: str) -> UUID | None:
    found = conn.execute(select(s.c.id).where(s.c.throw_key == throw_key)).scalar()
    return UUID(str(found)) if found is not None else None


def throw(
    conn: Connection,
    signal_id: UUID,
    name: str,
    variables: dict[str, Any] | None,
    now: datetime,
    *,
    thrower: tuple[UUID, UUID] | None = None,
    throw_key: str | None = None,
    only_token: UUID | None = None,
    process_keys: Collection[str] | None = None,
) -> int:
    """Insert the signal and snapshot its recipients (every token that listens for ``name``
    now, every latest definition that starts on it); returns how many. ``only_token``: that
    token alone (no start event); ``process_keys``: only instances and definitions of those."""
    conn.execute(
        s.insert().values(
            id=signal_id,
            name=name,
            variables=variables or None,
            thrown_at=now,
            instance_id=thrower[0] if thrower else None,
            token_id=thrower[1] if thrower else None,
            throw_key=throw_key,
            recipients=0,
        )
    )
    at_node = and_(
        subs.c.target == SignalTarget.NODE.value,
        t.c.node_id == subs.c.node_id,
        t.c.state == TokenState.WAITING.value,
    )
    at_root = and_(
        subs.c.target == SignalTarget.ROOT.value,
        t.c.parent_token_id.is_(None),
        t.c.state.in_(_LIVE),
    )
    tokens = (
        select(
            literal(signal_id, Uuid).label("signal_id"),
            t.c.id,
            literal(SignalTarget.TOKEN.value).label("kind"),
            t.c.version,
            t.c.instance_id,
        )
        .distinct()
        .select_from(
            t.join(pi, pi.c.id == t.c.instance_id).join(
                subs, subs.c.definition_id == pi.c.process_def_id
            )
        )
        .where(subs.c.signal == name, pi.c.state.in_(_RUNNING), or_(at_node, at_root))
    )
    if only_token is not None:
        tokens = tokens.where(t.c.id == only_token)
    if process_keys is not None:
        tokens = tokens.where(pi.c.process_key.in_(list(process_keys)))
    conn.execute(
        d.insert().from_select(
            ["signal_id", "target", "kind", "token_version", "instance_id"], tokens
        )
    )
    other = pd.alias("other")
    latest = select(func.max(other.c.version)).where(other.c.key == pd.c.key).scalar_subquery()
    starts = (
        select(
            literal(signal_id, Uuid).label("signal_id"),
            subs.c.definition_id,
            literal(SignalTarget.START.value).label("kind"),
            subs.c.node_id,
        )
        .select_from(subs.join(pd, pd.c.id == subs.c.definition_id))
        .where(
            subs.c.signal == name,
            subs.c.target == SignalTarget.START.value,
            pd.c.version == latest,
        )
    )
    if only_token is not None:
        starts = starts.where(false())
    if process_keys is not None:
        starts = starts.where(pd.c.key.in_(list(process_keys)))
    conn.execute(d.insert().from_select(["signal_id", "target", "kind", "node_id"], starts))
    n = left(conn, signal_id)
    conn.execute(s.update().where(s.c.id == signal_id).values(recipients=n))
    if n == 0:
        conn.execute(s.update().where(s.c.id == signal_id).values(finished_at=now))
    return n


def get(conn: Connection, signal_id: UUID) -> SignalRow | None:
    r = conn.execute(
        select(s.c.id, s.c.name, s.c.variables, s.c.instance_id, s.c.finished_at).where(
            s.c.id == signal_id
        )
    ).first()
    if r is None:
        return None
    return SignalRow(r.id, r.name, r.variables, r.instance_id, r.finished_at)


def claim(conn: Connection, signal_id: UUID, limit: int) -> list[Delivery]:
    """Up to ``limit`` deliveries no other transaction holds, by instance (so two batches
    lock instances in the same order)."""
    rows = conn.execute(
        select(d.c.target, d.c.kind, d.c.token_version, d.c.instance_id, d.c.node_id)
        .where(d.c.signal_id == signal_id)
        .order_by(d.c.instance_id, d.c.target)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [
        Delivery(r.target, SignalTarget(r.kind), r.token_version, r.instance_id, r.node_id)
        for r in rows
    ]


def done(conn: Connection, signal_id: UUID, targets: Sequence[UUID], now: datetime) -> bool:
    """Delete the delivered rows; returns whether any is left (else the signal is finished)."""
    if targets:
        conn.execute(d.delete().where(d.c.signal_id == signal_id, d.c.target.in_(targets)))
    left = conn.execute(select(d.c.target).where(d.c.signal_id == signal_id).limit(1)).first()
    if left is None:
        conn.execute(
            s.update().where(s.c.id == signal_id, s.c.finished_at.is_(None)).values(finished_at=now)
        )
    return left is not None


def unfinished(conn: Connection, before: datetime, limit: int) -> list[UUID]:
    """Signals thrown before ``before`` whose deliveries are not all made."""
    rows = conn.execute(
        select(s.c.id)
        .where(s.c.finished_at.is_(None), s.c.thrown_at < before)
        .order_by(s.c.thrown_at)
        .limit(limit)
    )
    return [r.id for r in rows]


def left(conn: Connection, signal_id: UUID) -> int:
    return int(
        conn.execute(
            select(func.count()).select_from(d).where(d.c.signal_id == signal_id)
        ).scalar_one()
    )
