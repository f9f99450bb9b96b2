"""``/process-definition/statistics`` and ``/process-definition/{id}/statistics`` against a
real server: instances waiting at a user task, failed into incidents, waiting in a parallel
split; counts by definition and by activity, with failed jobs and incidents when asked."""

from __future__ import annotations

import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.ops_processes import (  # noqa: F401 (a fixture)
    parallel_bpmn,
    review_bpmn,
    server_imports_the_handlers,
    start,
    to_incident,
)


@pytest.fixture(scope="module")
def world(server: Server) -> dict[str, str]:
    engine = server.runtime.engine
    review = engine.deploy_bpmn(review_bpmn("st_review"))[0].id
    split = engine.deploy_bpmn(parallel_bpmn("st_split"))[0].id
    idle = engine.deploy_bpmn(review_bpmn("st_idle"))[0].id
    server.add("viewer", Role.VIEWER)
    for n in range(2):
        start(server.runtime, "st_review", f"wait-{n}")
    for n in range(3):
        to_incident(server.runtime, "st_review", f"fail-{n}")
    start(server.runtime, "st_split", "split-1")
    return {"review": str(review), "split": str(split), "idle": str(idle)}


def _get(server: Server, path: str, **params: str) -> list[dict[str, object]]:
    with server.client("viewer") as c:
        got = c.get(path, params=params)
    assert got.status_code == 200, got.text
    return list(got.json())


def test_every_definition_with_its_counts(server: Server, world: dict[str, str]) -> None:
    by_id = {s["id"]: s for s in _get(server, "/process-definition/statistics")}
    review, idle = by_id[world["review"]], by_id[world["idle"]]
    assert review["instances"] == 5 and review["failedJobs"] == 0 and review["incidents"] == []
    assert isinstance(review["definition"], dict) and review["definition"]["key"] == "st_review"
    assert idle["instances"] == 0 and idle["incidents"] == []
    asked = {
        s["id"]: s
        for s in _get(server, "/process-definition/statistics", failedJobs="true", incidents="true")
    }
    assert asked[world["review"]]["failedJobs"] == 3
    assert asked[world["review"]]["incidents"] == [
        {"incidentType": "failedJob", "incidentCount": 3}
    ]
    typed = _get(server, "/process-definition/statistics", incidentsForType="failedExternalTask")
    assert all(s["incidents"] == [] for s in typed)


def test_activities_with_tokens_at_work(server: Server, world: dict[str, str]) -> None:
    path = f"/process-definition/{world['review']}/statistics"
    found = {s["id"]: s for s in _get(server, path, failedJobs="true", incidents="true")}
    assert set(found) == {"review", "charge"}
    assert found["review"]["instances"] == 2 and found["review"]["incidents"] == []
    assert found["charge"]["instances"] == 3 and found["charge"]["failedJobs"] == 3
    assert found["charge"]["incidents"] == [{"incidentType": "failedJob", "incidentCount": 3}]
    # The token waiting at the fork for its branches is not counted at the gateway; branch a
    # is done and waits at the join, as Camunda counts an execution waiting there.
    split = {
        s["id"]: s["instances"]
        for s in _get(server, f"/process-definition/{world['split']}/statistics")
    }
    assert split == {"b": 1, "join": 1}


def test_statistics_refuse_two_ways_of_asking_and_unknown_ids(
    server: Server, world: dict[str, str]
) -> None:
    with server.client("viewer") as c:
        both = c.get(
            "/process-definition/statistics", params={"incidents": "true", "incidentsForType": "x"}
        )
        assert both.status_code == 400 and "Only one" in both.json()["message"]
        missing = c.get("/process-definition/7e0c8b8e-3b1c-4a8e-9a49-0a4b5e8e9f10/statistics")
        assert missing.status_code == 404
        assert c.get("/process-definition/statistics", auth=None).status_code == 401
