"""Inputs a review found answered with a 500, each now a clear answer: digits that are not
ASCII, numbers past Java's int, impossible time zones, LIKE patterns ending in a backslash,
file names outside Latin-1, a visit asked for by id on a later page."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.server.conftest import Server
from tests.server.processes import deploy, error_boundary_bpmn, start


@pytest.fixture(scope="module")
def op(server: Server) -> Iterator[httpx.Client]:
    deploy(server.runtime, "odd_inputs", "odd-topic")
    with server.client("operator") as client:
        yield client


def test_a_version_that_is_not_an_ascii_java_int_is_a_400(op: httpx.Client) -> None:
    for version in ("²", "99999999999", "-1"):
        got = op.get("/process-definition", params={"version": version})
        assert got.status_code == 400, got.text
        assert "version" in got.json()["message"]
    missing = op.get("/process-definition/odd_inputs:²:8f1f3c7e-5f52-4b7e-9f80-1a2b3c4d5e6f")
    assert missing.status_code == 404, missing.text


def test_paging_past_java_int_is_a_400(op: httpx.Client) -> None:
    for path in ("/deployment", "/process-definition", "/process-instance"):
        got = op.get(path, params={"firstResult": str(10**20)})
        assert got.status_code == 400, (path, got.text)
        assert "firstResult" in got.json()["message"]


def test_an_impossible_offset_is_a_400_naming_the_date(op: httpx.Client) -> None:
    got = op.get("/deployment", params={"after": "2026-01-01T00:00:00.000+2400"})
    assert got.status_code == 400, got.text
    assert "2026-01-01T00:00:00.000+2400" in got.json()["message"]


def test_a_like_pattern_ending_in_a_backslash_matches_a_backslash(op: httpx.Client) -> None:
    for path, name in (
        ("/process-definition", "keyLike"),
        ("/deployment", "nameLike"),
        ("/process-instance", "businessKeyLike"),
        ("/task", "assigneeLike"),
    ):
        got = op.get(path, params={name: "odd\\"})
        assert got.status_code == 200, (path, got.text)
        assert got.json() == []
    assert [d["key"] for d in op.get("/process-definition", params={"keyLike": "odd%"}).json()]


def test_a_file_name_outside_latin_1_downloads(op: httpx.Client) -> None:
    name = "订单.bpmn"
    files = {name: (name, error_boundary_bpmn("odd_named", "odd-named").encode(), "text/xml")}
    made = op.post("/deployment/create", data={"deployment-name": "odd"}, files=files)
    assert made.status_code == 200, made.text
    deployment = made.json()["id"]
    [resource] = op.get(f"/deployment/{deployment}/resources").json()
    got = op.get(f"/deployment/{deployment}/resources/{resource['id']}/data")
    assert got.status_code == 200, got.text
    assert "filename*=UTF-8''%E8%AE%A2%E5%8D%95.bpmn" in got.headers["content-disposition"]
    assert got.content.startswith(b"<?xml")


def test_a_visit_by_id_is_found_on_its_own_page(server: Server, op: httpx.Client) -> None:
    iid = start(server.runtime, "odd_inputs")
    params = {"processInstanceId": iid, "sortBy": "startTime", "sortOrder": "asc"}
    visits = op.get("/history/activity-instance", params=params).json()
    assert len(visits) >= 2
    last = visits[-1]["id"]
    one = {**params, "activityInstanceId": last}
    assert [v["id"] for v in op.get("/history/activity-instance", params=one).json()] == [last]
    later = {**one, "firstResult": "1"}
    assert op.get("/history/activity-instance", params=later).json() == []
    counted = op.get("/history/activity-instance/count", params=one).json()
    assert counted == {"count": 1}
    two = {**params, "processInstanceId": f"{iid},{iid}"}
    refused = op.get("/history/activity-instance", params=two)
    assert refused.status_code == 400 and "one processInstanceId" in refused.json()["message"]
