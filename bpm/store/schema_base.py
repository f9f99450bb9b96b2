"""What every table module of the schema shares: one ``MetaData`` (with the naming
convention the migrations use), the values each CHECK constraint allows (the enums of
``bpm.states``), and the sequences.

The tables are split by what they hold (``schema_definitions``, ``schema_history``, and the
runtime tables in ``schema``); ``bpm.store.schema`` re-exports them all, so callers import
tables from one place and ``metadata`` holds every table once ``schema`` is imported.
"""

from __future__ import annotations

from sqlalchemy import (
    MetaData,
    Sequence,
)

from bpm.states import (
    IncidentState,
    InstanceState,
    LinkType,
    RecordState,
    Role,
    TaskKind,
    TaskState,
    TimerState,
    TokenMode,
    TokenState,
    WaitKind,
    values,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

#: The values each CHECK constraint allows: the enums of bpm.states, nothing written by hand.
INSTANCE_STATES = values(InstanceState)
TOKEN_STATES = values(TokenState)
TOKEN_MODES = values(TokenMode)
WAIT_KINDS = values(WaitKind)
LINK_TYPES = values(LinkType)
TASK_STATES = values(TaskState)
TASK_KINDS = values(TaskKind)
TIMER_STATES = values(TimerState)
RECORD_STATES = values(RecordState)
INCIDENT_STATES = values(IncidentState)
ROLES = values(Role)

#: One sequence numbers all three history tables on PostgreSQL, so a trace merges them in the
#: exact order they were written. Each ``nextval`` reserves a block of ids for one transaction's
#: rows (bpm.store.history). SQLite ignores sequences; the writer numbers rows itself.
HISTORY_BLOCK = 1000
history_seq = Sequence("bpm_history_seq", increment=HISTORY_BLOCK, metadata=metadata)
#: Numbers compensation records in success order across branches (PostgreSQL).
compensation_seq = Sequence("bpm_compensation_seq", metadata=metadata)


def check_in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"
