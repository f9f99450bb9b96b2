"""The enums of ``bpm.states`` are what the database allows and what replay rebuilds: a value
added to one and not the others fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

import pytest
from sqlalchemy import text

from bpm.engine.operations import replay
from bpm.engine.semantics.instance_state import _EVENT_OF_STATE
from bpm.events import SAGA_EVENTS
from bpm.states import (
    EngineEvent,
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
)
from bpm.store import Database
from bpm.store.migrate import upgrade

QUOTED = re.compile(r"'([^']*)'")
#: (table, CHECK constraint) -> the enum whose values it must allow, exactly.
CHECKED: dict[tuple[str, str], type[StrEnum]] = {
    ("process_instances", "ck_process_instances_state"): InstanceState,
    ("tokens", "ck_tokens_state"): TokenState,
    ("tokens", "ck_tokens_mode"): TokenMode,
    ("token_links", "ck_token_links_link_type"): LinkType,
    ("external_tasks", "ck_external_tasks_state"): TaskState,
    ("external_tasks", "ck_external_tasks_kind"): TaskKind,
    ("timers", "ck_timers_state"): TimerState,
    ("compensation_records", "ck_compensation_records_status"): RecordState,
    ("incidents", "ck_incidents_state"): IncidentState,
    ("api_credentials", "ck_api_credentials_role"): Role,
}


@pytest.fixture
def pg(empty_pg_url: str) -> Iterator[Database]:
    db = Database(empty_pg_url)
    upgrade(db)
    yield db
    db.dispose()


def test_every_check_constraint_allows_exactly_its_enum(pg: Database) -> None:
    with pg.engine.connect() as conn:
        found = {
            (str(r[0]), str(r[1])): str(r[2])
            for r in conn.execute(
                text(
                    "SELECT c.relname, con.conname, pg_get_constraintdef(con.oid) "
                    "FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid "
                    "WHERE con.contype = 'c'"
                )
            )
        }
    for key, enum in CHECKED.items():
        assert key in found, f"no CHECK constraint {key[1]} on {key[0]}"
        assert set(QUOTED.findall(found[key])) == {m.value for m in enum}, key


def test_replay_knows_every_instance_state() -> None:
    assert set(replay.INSTANCE_STATES.values()) == set(InstanceState)
    assert all(isinstance(v, InstanceState) for v in replay.INSTANCE_STATES.values())
    # ... by the same events the engine writes for them
    assert set(replay.INSTANCE_STATES) <= set(EngineEvent)
    assert set(_EVENT_OF_STATE) == set(InstanceState)
    assert {replay.INSTANCE_STATES[e] for e in _EVENT_OF_STATE.values()} == set(InstanceState)


def test_the_engine_writes_no_event_type_outside_the_enums() -> None:
    """Every ``type=``/``event=`` a history write in bpm/engine passes is an enum member."""
    root = Path(replay.__file__).parent
    literal = re.compile(r"\b(?:type|event)=\"([A-Za-z_]+)\"")
    found = {
        (path.name, m.group(1))
        for path in root.glob("*.py")
        for m in literal.finditer(path.read_text())
    }
    assert found == set(), f"history written with string literals: {sorted(found)}"
    assert set(SAGA_EVENTS) <= set(EngineEvent)


def test_the_engine_and_the_store_compare_no_state_with_a_string_literal() -> None:
    """``state == "WAITING"`` runs, and goes stale the day a state is renamed."""
    bpm_root = Path(replay.__file__).parents[1]
    compared = re.compile(r'(?:==|!=) "[A-Z][A-Z_]+"|\bin \("[A-Z][A-Z_]+"')
    found = [
        f"{path.relative_to(bpm_root)}:{n}: {line.strip()}"
        for folder in ("engine", "store")
        for path in (bpm_root / folder).glob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if compared.search(line)
    ]
    assert found == []
