"""New row ids: time-ordered UUIDs (version 7: a millisecond timestamp, then random bits).

A random id (version 4) lands anywhere in its primary key's B-tree, so at a million rows
every insert reads and dirties a page of its own, and the index's working set is the whole
index; ids that grow with time append to its right edge, so the pages an insert touches stay
in memory however large the table grows (``python -m bench.id_locality`` measures it). They
still carry 74 random bits: unguessable enough for ids that are not secrets, and two
processes never collide. ``uuid_utils`` (Rust, maintained) makes them in under a microsecond,
faster than ``uuid.uuid4``, as the standard library's ``uuid.UUID`` the columns take.

Ids people read and shorten stay random (``new_named_id``): instances, definitions,
deployments. The CLI takes a unique start of an instance id (``8a9e554a``), as the demo and
the tables print them; time-ordered ids made in the same minute share their first eight
digits, so that start would name them all. Those rows are one per instance or deployment,
not one per step, so their index inserts are not the hot path's.
"""

from __future__ import annotations

from uuid import UUID, uuid4

from uuid_utils.compat import uuid7


def new_id() -> UUID:
    return uuid7()


def new_named_id() -> UUID:
    return uuid4()
