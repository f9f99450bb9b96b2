"""API credential rows: who may call the HTTP API (hashes only, never a secret)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from bpm.states import Role
from bpm.store.schema import api_credentials as c


@dataclass(frozen=True)
class CredentialRow:
    """One caller: ``topics`` / ``processes`` None means not limited. ``user_id``: the user
    it acts as on the tasklist (None: its name), ``groups`` that user's groups."""

    name: str
    role: Role
    topics: tuple[str, ...] | None
    processes: tuple[str, ...] | None
    secret_hash: str
    created_at: datetime
    user_id: str | None = None
    groups: tuple[str, ...] = ()

    @property
    def user(self) -> str:
        return self.user_id or self.name


def _row(r: Sequence[Any]) -> CredentialRow:
    name, role, topics, processes, secret_hash, created_at, user_id, groups = r
    return CredentialRow(
        name,
        Role(role),
        None if topics is None else tuple(topics),
        None if processes is None else tuple(processes),
        secret_hash,
        created_at,
        user_id,
        tuple(groups or ()),
    )


def insert(conn: Connection, row: CredentialRow) -> None:
    conn.execute(
        c.insert().values(
            name=row.name,
            role=row.role,
            topics=None if row.topics is None else list(row.topics),
            processes=None if row.processes is None else list(row.processes),
            secret_hash=row.secret_hash,
            created_at=row.created_at,
            user_id=row.user_id,
            groups=list(row.groups) or None,
        )
    )


def get(conn: Connection, name: str) -> CredentialRow | None:
    found = conn.execute(select(*c.c).where(c.c.name == name)).first()
    return _row(found) if found is not None else None


def all_rows(conn: Connection) -> list[CredentialRow]:
    return [_row(r) for r in conn.execute(select(*c.c).order_by(c.c.name))]


def count(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(c)).scalar_one())


def delete(conn: Connection, name: str) -> bool:
    return conn.execute(c.delete().where(c.c.name == name)).rowcount == 1
