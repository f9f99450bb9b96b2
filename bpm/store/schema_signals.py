"""The tables of signal broadcasts (migration 0020).

- ``definition_signal_subscriptions``: per definition, what a signal of each name reaches
  (``SignalTarget``: a start event, a token waiting at a node, the root token), written at
  deploy, so a throw finds its recipients with one statement across every definition.
- ``signals``: one row per throw (its name, variables, thrower); ``finished_at`` is set when
  its last delivery is done, so the scan re-sends only unfinished ones.
- ``signal_deliveries``: the recipients a throw snapshotted in its own transaction, each
  deleted in the transaction that delivers it: a row is a delivery not yet made.
"""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, ForeignKey, Index, Integer, Table, Text, Uuid, text

from bpm.states import SignalTarget, values
from bpm.store.schema_base import check_in, metadata
from bpm.store.types import JsonValue, UtcDateTime

SIGNAL_TARGETS = values(SignalTarget)

definition_signal_subscriptions = Table(
    "definition_signal_subscriptions",
    metadata,
    Column(
        "definition_id",
        Uuid,
        ForeignKey("process_definitions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("signal", Text, primary_key=True),
    Column("node_id", Text, primary_key=True),
    Column("target", Text, primary_key=True),
    CheckConstraint(check_in("target", SIGNAL_TARGETS), name="target"),
    Index("ix_definition_signal_subscriptions_signal", "signal"),
)

signals = Table(
    "signals",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", Text, nullable=False),
    Column("variables", JsonValue),
    Column("thrown_at", UtcDateTime, nullable=False),
    # The throwing instance and token (None: thrown through the API).
    Column("instance_id", Uuid),
    Column("token_id", Uuid),
    # A throw request's key (the transport's message id): a request delivered twice throws once.
    Column("throw_key", Text, unique=True),
    Column("recipients", Integer, nullable=False),
    Column("finished_at", UtcDateTime),
    Index(
        "ix_signals_unfinished",
        "thrown_at",
        postgresql_where=text("finished_at IS NULL"),
        sqlite_where=text("finished_at IS NULL"),
    ),
)

signal_deliveries = Table(
    "signal_deliveries",
    metadata,
    Column("signal_id", Uuid, ForeignKey("signals.id", ondelete="CASCADE"), primary_key=True),
    # The token (TOKEN) or the definition whose start event it starts (START).
    Column("target", Uuid, primary_key=True),
    Column("kind", Text, nullable=False),
    # TOKEN: the token's version and instance when the signal was thrown.
    Column("token_version", Integer),
    Column("instance_id", Uuid),
    # START: the signal start event.
    Column("node_id", Text),
    CheckConstraint(check_in("kind", SIGNAL_TARGETS), name="kind"),
)
