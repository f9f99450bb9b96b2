"""``/task`` over HTTP against a real server: lists and their filters, claims, completing
with the task's form checked, the form's values; and who may do what."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.states import Role
from tests.server.conftest import Server
from tests.server.ops_processes import (  # noqa: F401 (a fixture)
    form_key_bpmn,
    review_bpmn,
    review_task,
    server_imports_the_handlers,
    start,
)

TASK_FIELDS = {
    "id", "name", "assignee", "owner", "created", "lastUpdated", "due", "followUp",
    "delegationState", "description", "executionId", "parentTaskId", "priority",
    "processDefinitionId", "processInstanceId", "caseExecutionId", "caseDefinitionId",
    "caseInstanceId", "taskDefinitionKey", "suspended", "formKey", "camundaFormRef", "tenantId",
    "taskState",
}  # fmt: skip


@pytest.fixture(scope="module")
def deployed(server: Server) -> Server:
    server.runtime.engine.deploy_bpmn(review_bpmn("ut_review"))
    server.runtime.engine.deploy_bpmn(form_key_bpmn("ut_sign"))
    server.add("viewer", Role.VIEWER)
    server.add("starter", Role.STARTER)
    server.add("worker", Role.WORKER)
    return server


def _one(server: Server, instance: str) -> dict[str, object]:
    with server.client("operator") as c:
        found = c.get("/task", params={"processInstanceId": instance}).json()
    assert len(found) == 1, found
    return dict(found[0])


def test_a_task_reads_as_camunda_s_task_dto(deployed: Server) -> None:
    instance = start(deployed.runtime, "ut_review", "ut-dto")
    task = _one(deployed, instance)
    assert set(task) == TASK_FIELDS
    assert task["name"] == "Review order" and task["description"] == "Check the order"
    assert task["taskDefinitionKey"] == "review" and task["priority"] == 60
    assert task["assignee"] is None and task["suspended"] is False
    assert task["formKey"] is None and task["camundaFormRef"] is None
    assert isinstance(task["due"], str) and task["due"].endswith("+0000")
    shown = deployed.runtime.engine.show(instance)
    assert task["processDefinitionId"] == shown["definition_id"]
    assert task["executionId"] == shown["tokens"][0]["id"]
    with deployed.client("viewer") as c:
        assert c.get(f"/task/{task['id']}").json() == task


def test_filters_counts_paging_and_sorting(deployed: Server) -> None:
    a = start(deployed.runtime, "ut_review", "ut-filter-a")
    b = start(deployed.runtime, "ut_review", "ut-filter-b")
    ta, tb = review_task(deployed.runtime, a), review_task(deployed.runtime, b)
    deployed.runtime.engine.claim(tb, "bob")
    with deployed.client("viewer") as c:

        def ids(**params: str | int) -> list[str]:
            found = c.get("/task", params={"processDefinitionKey": "ut_review", **params})
            assert found.status_code == 200, found.text
            return [t["id"] for t in found.json()]

        # Camunda's candidate filters skip claimed tasks unless includeAssignedTasks.
        assert ta in ids(candidateGroup="clerks") and tb not in ids(candidateGroup="clerks")
        assert tb in ids(candidateGroup="clerks", includeAssignedTasks="true")
        assert ids(candidateGroup="nobody") == []
        assert ids(assignee="bob") == [tb]
        assert ids(assigneeLike="b%") == [tb]
        assert ta in ids(unassigned="true") and tb not in ids(unassigned="true")
        assert tb in ids(assigned="true") and ta not in ids(assigned="true")
        assert ids(processInstanceBusinessKey="ut-filter-a") == [ta]
        assert ids(processInstanceBusinessKeyLike="ut-filter-%", sortBy="created",
                   sortOrder="desc") == [tb, ta]  # fmt: skip
        assert ta in ids(taskDefinitionKey="review") and ids(taskDefinitionKey="other") == []
        assert ta in ids(withCandidateGroups="true") and ids(withoutCandidateGroups="true") == []
        soon, later = datetime.now(UTC) + timedelta(days=1), datetime.now(UTC) + timedelta(days=3)
        assert ids(dueAfter=soon.isoformat(), dueBefore=later.isoformat(),
                   processInstanceBusinessKey="ut-filter-a") == [ta]  # fmt: skip
        assert ids(dueBefore=soon.isoformat()) == [] and ids(suspended="true") == []
        assert ids(minPriority="61") == [] and ta in ids(maxPriority="60")
        everything = ids(sortBy="created", sortOrder="asc")
        assert ids(sortBy="created", sortOrder="asc", firstResult=1, maxResults=1) == [
            everything[1]
        ]
        count = c.get("/task/count", params={"processDefinitionKey": "ut_review"}).json()
        assert count == {"count": len(everything)}
        posted = c.post(
            "/task",
            params={"maxResults": 10},
            json={
                "processDefinitionKeyIn": ["ut_review"],
                "candidateGroups": ["clerks", "others"],
                "includeAssignedTasks": True,
                "processInstanceIdIn": [a, b],
                "sorting": [{"sortBy": "assignee", "sortOrder": "asc"}],
                "tenantId": None,
            },
        )
        assert posted.status_code == 200, posted.text
        assert {t["id"] for t in posted.json()} == {ta, tb}
        counted = c.post("/task/count", json={"processInstanceIdIn": [a, b], "assigned": True})
        assert counted.json() == {"count": 1}


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"nameLike": "Review%"}, "nameLike"),
        ({"tenantIdIn": "x"}, "tenantIdIn"),
        ({"processVariables": "a_eq_1"}, "processVariables"),
        ({"noSuchFilter": "1"}, "noSuchFilter"),
        ({"sortBy": "name", "sortOrder": "asc"}, "name"),
        ({"sortBy": "created"}, "sortOrder"),
        ({"dueBefore": "tomorrow"}, "dueBefore"),
        ({"unassigned": "maybe"}, "unassigned"),
        ({"maxResults": "5000"}, "maxResults"),
        ({"firstResult": "-1"}, "firstResult"),
    ],
)
def test_a_filter_bpm_cannot_honour_is_refused_naming_it(
    deployed: Server, params: dict[str, str], named: str
) -> None:
    with deployed.client("viewer") as c:
        refused = c.get("/task", params=params)
        counted = c.get("/task/count", params=params)
    assert refused.status_code == 400, refused.text
    assert named in refused.json()["message"]
    # a count has no order and no page: it ignores them, as Camunda's does
    paging = set(params) <= {"sortBy", "sortOrder", "firstResult", "maxResults"}
    assert counted.status_code == (200 if paging else 400), counted.text


def test_a_post_query_checks_its_body_too(deployed: Server) -> None:
    with deployed.client("viewer") as c:
        wrong_type = c.post("/task", json={"processInstanceIdIn": "not-a-list", "assigned": 1})
        refused = c.post("/task", json={"orQueries": [{"name": "x"}]})
        not_json = c.post("/task", content=b"{", headers={"content-type": "application/json"})
        nul = c.post("/task", json={"assignee": "a\x00b"})
        huge = c.get("/task", params={"priority": str(2**40)})
        far = c.get("/task", params={"firstResult": str(2**40)})
    assert nul.status_code == 400 and "assignee" in nul.json()["message"]
    assert huge.status_code == 400 and "priority" in huge.json()["message"]
    assert far.status_code == 400 and "firstResult" in far.json()["message"]
    assert wrong_type.status_code == 400 and "assigned" in wrong_type.json()["message"]
    assert refused.status_code == 400 and "orQueries" in refused.json()["message"]
    assert not_json.status_code == 400


def test_a_filter_that_filters_nothing_is_accepted_whatever_its_name(deployed: Server) -> None:
    """Camunda's Tasklist sends these with every query; none of them narrows the list."""
    sent = {
        "variableNamesIgnoreCase": False,
        "variableValuesIgnoreCase": False,
        "tenantIdIn": [],
        "orQueries": [],
        "processVariables": [],
        "sorting": [{"sortBy": "created", "sortOrder": "desc"}],
    }
    with deployed.client("viewer") as c:
        queried = c.post("/task", json=sent)
        everything = c.get("/task")
        listed = c.get("/task", params={"withoutTenantId": "false", "name": ""})
    assert queried.status_code == 200, queried.text
    assert listed.status_code == 200, listed.text
    assert {t["id"] for t in queried.json()} == {t["id"] for t in everything.json()}


def test_unknown_and_malformed_task_ids_are_404(deployed: Server) -> None:
    with deployed.client("operator") as c:
        for path in ("/task/7e0c8b8e-3b1c-4a8e-9a49-0a4b5e8e9f10", "/task/nope"):
            for suffix in ("", "/form", "/form-variables", "/variables"):
                got = c.get(path + suffix)
                assert got.status_code == 404, (path + suffix, got.text)
                assert got.json()["type"] == "RestException"
        assert c.post("/task/nope/claim", json={"userId": "ann"}).status_code == 404
        assert c.post("/task/nope/complete", json={}).status_code == 404


def test_claim_unclaim_and_a_claim_by_someone_else(deployed: Server) -> None:
    task = review_task(deployed.runtime, start(deployed.runtime, "ut_review"))
    with deployed.client("starter") as c:
        assert c.post(f"/task/{task}/claim", json={"userId": "ann"}).status_code == 204
        again = c.post(f"/task/{task}/claim", json={"userId": "ann"})
        taken = c.post(f"/task/{task}/claim", json={"userId": "bob"})
        nobody = c.post(f"/task/{task}/claim", json={})
    assert again.status_code == 204
    assert taken.status_code == 409, taken.text
    assert taken.json()["type"] == "TaskAlreadyClaimedException"
    assert "ann" in taken.json()["message"]
    assert nobody.status_code == 400 and "userId" in nobody.json()["message"]
    with deployed.client("viewer") as c:
        assert c.get(f"/task/{task}").json()["assignee"] == "ann"
    with deployed.client("starter") as c:
        assert c.post(f"/task/{task}/unclaim").status_code == 204
    with deployed.client("viewer") as c:
        assert c.get(f"/task/{task}").json()["assignee"] is None


def test_submit_form_checks_the_fields_and_changes_nothing_when_refused(
    deployed: Server,
) -> None:
    instance = start(deployed.runtime, "ut_review")
    task = review_task(deployed.runtime, instance)
    with deployed.client("starter") as c:
        missing = c.post(f"/task/{task}/submit-form", json={"variables": {"amount": {"value": 3}}})
        wrong = c.post(
            f"/task/{task}/submit-form",
            json={"variables": {"approved": {"value": True}, "amount": {"value": "lots"}}},
        )
    assert missing.status_code == 400, missing.text
    assert "approved" in missing.json()["message"]
    assert wrong.status_code == 400 and "amount" in wrong.json()["message"]
    assert review_task(deployed.runtime, instance) == task
    assert deployed.runtime.engine.show(instance)["variables"] == {"orderId": "A1"}
    with deployed.client("starter") as c:
        done = c.post(
            f"/task/{task}/submit-form",
            json={"variables": {"approved": {"value": True, "type": "Boolean"},
                                "amount": {"value": 7, "type": "Long"}}},
        )  # fmt: skip
        gone = c.get(f"/task/{task}", auth=deployed.auth("operator"))
    assert done.status_code == 204, done.text
    assert gone.status_code == 404
    assert deployed.runtime.engine.show(instance)["variables"]["amount"] == 7


def test_complete_with_variables_in_return(deployed: Server) -> None:
    instance = start(deployed.runtime, "ut_review")
    task = review_task(deployed.runtime, instance)
    body = {
        "variables": {"approved": {"value": False}, "amount": {"value": 2}},
        "withVariablesInReturn": True,
    }
    with deployed.client("operator") as c:
        done = c.post(f"/task/{task}/complete", json=body)
        again = c.post(f"/task/{task}/complete", json=body)
    assert done.status_code == 200, done.text
    assert done.json()["approved"] == {"type": "Boolean", "value": False, "valueInfo": {}}
    assert done.json()["orderId"]["value"] == "A1"
    assert again.status_code == 404


def test_form_variables_form_and_variables(deployed: Server) -> None:
    instance = start(deployed.runtime, "ut_review", extra=[1, 2])
    task = review_task(deployed.runtime, instance)
    with deployed.client("viewer") as c:
        shown = c.get(f"/task/{task}/form-variables").json()
        some = c.get(f"/task/{task}/form-variables", params={"variableNames": "amount"}).json()
        form = c.get(f"/task/{task}/form").json()
        variables = c.get(f"/task/{task}/variables").json()
    assert shown == {
        "orderId": {"type": "String", "value": "A1", "valueInfo": {}},
        "amount": {"type": "Long", "value": 10, "valueInfo": {}},
        "approved": {"type": "Boolean", "value": None, "valueInfo": {}},
    }
    assert set(some) == {"amount"}
    assert form == {"key": None, "camundaFormRef": None, "contextPath": None}
    assert variables["extra"] == {"type": "Json", "value": "[1,2]", "valueInfo": {}}
    signed = deployed.runtime.engine.start("ut_sign", {"who": "ann"})
    deployed.runtime.run_until_idle(timeout=5)
    sign = review_task(deployed.runtime, str(signed.id))
    with deployed.client("viewer") as c:
        assert c.get(f"/task/{sign}/form").json()["key"] == "embedded:app:forms/sign.html"
        listed = c.get("/task", params={"processInstanceId": str(signed.id)}).json()[0]
        no_fields = c.get(f"/task/{sign}/form-variables").json()
    assert listed["formKey"] == "embedded:app:forms/sign.html" and listed["assignee"] == "ann"
    assert no_fields == {"who": {"type": "String", "value": "ann", "valueInfo": {}}}


def test_who_may_read_and_work_user_tasks(deployed: Server) -> None:
    task = review_task(deployed.runtime, start(deployed.runtime, "ut_review"))
    limited = "starter-other"
    deployed.secrets[limited] = credentials.add(
        deployed.db, limited, Role.STARTER, SYSTEM_CLOCK.now(), processes=("other",)
    )
    with deployed.client("worker") as c:
        assert c.get("/task").status_code == 403
        assert c.post(f"/task/{task}/claim", json={"userId": "w"}).status_code == 403
    with deployed.client("viewer") as c:
        assert c.get("/task").status_code == 200
        refused = c.post(f"/task/{task}/claim", json={"userId": "v"})
        assert refused.status_code == 403 and refused.json()["type"] == "AuthorizationException"
        assert c.post(f"/task/{task}/complete", json={}).status_code == 403
        assert c.post(f"/task/{task}/unclaim").status_code == 403
    with deployed.client("starter") as c:
        assert c.get("/task").status_code == 403  # lists need read
    with deployed.client(limited) as c:
        other = c.post(f"/task/{task}/claim", json={"userId": "s"})
        # The task's process is not this starter's to see: the refusal names the task only.
        assert other.status_code == 403 and "ut_review" not in other.json()["message"]
        assert task in other.json()["message"]
    with deployed.client() as c:
        assert c.get("/task").status_code == 401
    with deployed.client("viewer") as c:
        assert c.get(f"/task/{task}").json()["assignee"] is None
