"""New row ids: time-ordered UUIDs (version 7: a millisecond timestamp, then random bits).

A random id (version 4) lands anywhere in its primary key's B-tree, so at a million rows
every insert reads and dirties a page of its own, and the index's working set is the whole
index; ids that grow with time append to its right edge, so the pages an insert touches stay
in memory however large the table grows (``python -m bench.id_locality`` measures it). They
still carry 74 random bits: unguessable enough for ids that are not secrets, and two
processes never collide. ``uuid_utils`` (Rust, maintained) makes them in under a microsecond,
faster than ``uuid.uuid4``, as the standard library's ``uuid.UUID`` the columns take.
"""

from __future__ import annotations

from uuid import UUID

from uuid_utils.compat import uuid7


def new_id() -> UUID:
    return uuid7()
