"""A property-based fuzz run over the served OpenAPI document: schemathesis generates requests
for every operation, valid and invalid, and each answer must be a client error or a success,
never a 500, never a traceback; and a refused call (any 4xx) must change nothing in the
database.

It runs once per role (viewer, starter, worker, operator): a 403 is a fine answer, a 500 never
is. Each run is bounded twice, so it ends well inside the test timeout on a busy machine:
``BPM_FUZZ_EXAMPLES`` examples per operation and mode (default 8) and ``BPM_FUZZ_SECONDS`` of
generation per role (default 40; the operations not reached by then are named in the output).
A longer run by hand: ``BPM_FUZZ_EXAMPLES=200 BPM_FUZZ_SECONDS=0`` (0: no time bound);
``BPM_FUZZ_ONLY`` narrows it to the operations whose label contains that text.
"""

from __future__ import annotations

import base64
import os
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.strategies import SearchStrategy
from schemathesis import Case, GenerationMode
from schemathesis.core.result import Err
from sqlalchemy import text

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.processes import deploy, start

AnyCase = Case[Any]
EXAMPLES = int(os.environ.get("BPM_FUZZ_EXAMPLES", "8"))
#: Seconds of generation per role; 0: no bound.
SECONDS = float(os.environ.get("BPM_FUZZ_SECONDS", "40"))
#: Only the operations whose label (``POST /engine-rest/...``) contains this, when set.
ONLY = os.environ.get("BPM_FUZZ_ONLY", "")
ROLES = (Role.VIEWER, Role.STARTER, Role.WORKER, Role.OPERATOR)


def _table_counts(server: Server) -> dict[str, int]:
    """Rows per table: every change the API can make inserts, updates with a history row, or
    deletes, so equal counts before and after a refused call mean nothing was written."""
    with server.db.engine.connect() as conn:
        tables = conn.execute(
            text(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
                " AND table_name <> 'alembic_version' ORDER BY table_name"
            )
        ).scalars()
        names = list(tables)
        union = " UNION ALL ".join(
            f"SELECT '{name}' AS t, count(*) AS n FROM \"{name}\"" for name in names
        )
        return {str(t): int(n) for t, n in conn.execute(text(union))}


@pytest.fixture(scope="module")
def fuzzed(server: Server) -> Iterator[tuple[Server, dict[Role, dict[str, str]]]]:
    """The server with something to find (a deployed definition, a waiting instance with an
    external task) and a credential of each role; the starter and the worker are limited to
    that process and topic, as a real deployment limits them."""
    deploy(server.runtime, "fuzz_order", "fuzz-topic")
    start(server.runtime, "fuzz_order", business_key="fuzz-1", amount=3)
    headers = {}
    for role in ROLES:
        name = f"fuzz-{role.value.lower()}"
        processes = ("fuzz_order",) if role is Role.STARTER else ()
        topics = ("fuzz-topic",) if role is Role.WORKER else ()
        secret = server.add(name, role, topics=topics, processes=processes)
        token = base64.b64encode(f"{name}:{secret}".encode()).decode()
        headers[role] = {"Authorization": f"Basic {token}"}
    yield server, headers


def _bound_long_polls(case: AnyCase) -> None:
    """A generated long poll may ask to wait 30 minutes; the long-poll tests cover waiting,
    here it is cut to half a second so a run stays bounded."""
    body = case.body
    wait = body.get("asyncResponseTimeout") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(wait, int | float):
        body["asyncResponseTimeout"] = min(wait, 500)


def _check(server: Server, headers: dict[str, str], case: AnyCase) -> None:
    _bound_long_polls(case)
    before = _table_counts(server)
    base_url = server.base.removesuffix("/engine-rest")
    response = case.call(base_url=base_url, headers=headers, timeout=30)
    body = response.text
    where = f"{case.method} {case.formatted_path} -> {response.status_code}: {body[:400]}"
    # 501: what bpm does not have yet (POST /signal), said so on purpose, not a fault
    assert response.status_code < 500 or response.status_code == 501, where
    assert "Traceback" not in body and 'File "' not in body, where
    if 400 <= response.status_code < 500:
        assert _table_counts(server) == before, f"a refused call changed rows: {where}"


def _fuzz(server: Server, headers: dict[str, str], strategy: SearchStrategy[AnyCase]) -> None:
    @given(strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        database=None,
    )
    def run(case: AnyCase) -> None:
        _check(server, headers, case)

    run()


def _described(exc: BaseException) -> str:
    """The failure and, for a group (hypothesis's flaky failures), each failure in it."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, BaseExceptionGroup):
        text += "".join(f"\n  - {_described(inner)}" for inner in exc.exceptions)
    return text


def _faults_logged(server: Server) -> str:
    """The server's log entries of its faults (the 500s), tracebacks included."""
    log = server.log_text()
    entries = [log[i : i + 4000] for i in _starts(log, "fault ")]
    return "\nserver faults:\n" + "\n---\n".join(entries[:5])


def _starts(text: str, needle: str) -> list[int]:
    found, at = [], text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.value.lower())
def test_no_call_is_a_fault_and_a_refused_one_changes_nothing(
    fuzzed: tuple[Server, dict[Role, dict[str, str]]], role: Role
) -> None:
    """Every operation of the served document, with valid and with invalid requests, in an
    order of its own each run, so that a time-bounded run reaches different ones each time."""
    server, headers = fuzzed
    schema = schemathesis.openapi.from_url(f"{server.base}/openapi.json", headers=headers[role])
    failures: list[str] = []
    operations = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            failures.append(f"the served document is not valid OpenAPI: {result.err()}")
        elif ONLY in result.ok().label:
            operations.append(result.ok())
    assert operations, "the served document has no operation (or none matches BPM_FUZZ_ONLY)"
    random.shuffle(operations)
    ends = time.monotonic() + SECONDS if SECONDS > 0 else float("inf")
    not_reached = []
    for operation in operations:
        if time.monotonic() > ends:
            not_reached.append(operation.label)
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _fuzz(server, headers[role], operation.as_strategy(generation_mode=mode))
            except Unsatisfiable:
                continue  # no invalid request exists for it (an operation with no input)
            except Exception as failed:  # an assertion, a timeout, or a flaky one's group
                failures.append(f"{operation.label} ({mode}): {_described(failed)}")
    if not_reached:
        print(
            f"{role.value}: {len(not_reached)} of {len(operations)} operations not reached"
            f" within BPM_FUZZ_SECONDS={SECONDS:g}: {', '.join(sorted(not_reached))}"
        )
    assert len(not_reached) < len(operations), "the time bound ended the run before it began"
    assert not failures, "\n".join(failures) + _faults_logged(server)


def test_a_nul_character_anywhere_is_a_400_naming_where(
    fuzzed: tuple[Server, dict[Role, dict[str, str]]],
) -> None:
    """PostgreSQL cannot store NUL in text; each way in says so instead of failing inside."""
    server, _ = fuzzed
    before = _table_counts(server)
    with server.client(f"fuzz-{Role.OPERATOR.value.lower()}") as api:
        in_query = api.get("/external-task", params={"workerId": "w\x00"})
        in_path = api.get("/external-task/a%00b")
        fetch = {
            "workerId": "w1",
            "maxTasks": 1,
            "topics": [{"topicName": "fuzz-topic", "lockDuration": 1000, "variables": ["a\x00"]}],
        }
        in_body = api.post("/external-task/fetchAndLock", json=fetch)
    assert [r.status_code for r in (in_query, in_path, in_body)] == [400, 400, 400]
    assert in_query.json()["message"].startswith("query: a text may not contain the NUL")
    assert in_path.json()["message"].startswith("path: ")
    assert "topics[0].variables[0]" in in_body.json()["message"]
    assert _table_counts(server) == before
