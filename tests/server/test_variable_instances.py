"""``/variable-instance`` against a real server: the variables of live instances only (an
ended instance's are history), filtered by name, pattern and instance, counted, by GET and
POST; a filter bpm cannot honour is refused by name."""

from __future__ import annotations

import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.ops_processes import (  # noqa: F401 (a fixture)
    review_bpmn,
    server_imports_the_handlers,
    start,
)


@pytest.fixture(scope="module")
def world(server: Server) -> dict[str, str]:
    engine = server.runtime.engine
    engine.deploy_bpmn(review_bpmn("vi_review"))
    server.add("viewer", Role.VIEWER)
    live = start(server.runtime, "vi_review", "vi-1", amount=7, note="big")
    ended = start(server.runtime, "vi_review", "vi-2", amount=9)
    engine.cancel(ended)
    return {"live": live, "ended": ended}


def test_live_variables_by_name_and_instance(server: Server, world: dict[str, str]) -> None:
    with server.client("viewer") as c:
        mine = c.get("/variable-instance", params={"processInstanceIdIn": world["live"]}).json()
        assert {v["name"]: v["value"] for v in mine} == {
            "orderId": "A1",
            "amount": 7,
            "note": "big",
        }
        amount = next(v for v in mine if v["name"] == "amount")
        assert amount["type"] == "Integer" and amount["processInstanceId"] == world["live"]
        assert amount["executionId"] == world["live"] and amount["taskId"] is None
        ended = c.get("/variable-instance", params={"processInstanceIdIn": world["ended"]})
        assert ended.json() == []
        history = c.get("/history/variable-instance", params={"processInstanceId": world["ended"]})
        assert {v["name"] for v in history.json()} == {"orderId", "amount"}
        assert history.json()[0]["id"] in {
            v["id"] for v in c.get("/history/variable-instance").json()
        }
        body = {"variableName": "amount", "processInstanceIdIn": [world["live"], world["ended"]]}
        posted = c.post("/variable-instance", json=body).json()
        assert [(v["name"], v["value"]) for v in posted] == [("amount", 7)]
        assert c.post("/variable-instance/count", json=body).json() == {"count": 1}
        like = c.get(
            "/variable-instance/count",
            params={"variableNameLike": "no%", "processInstanceIdIn": world["live"]},
        )
        assert like.json() == {"count": 1}


def test_filters_bpm_cannot_honour_are_refused(server: Server, world: dict[str, str]) -> None:
    with server.client("viewer") as c:
        got = c.get("/variable-instance", params={"taskIdIn": "x"})
        assert got.status_code == 400 and "taskIdIn" in got.json()["message"]
        assert c.get("/variable-instance/count", params={"processInstanceIdIn": "nope"}).json() == {
            "count": 0
        }
    with server.client() as anonymous:
        assert anonymous.get("/variable-instance").status_code == 401
