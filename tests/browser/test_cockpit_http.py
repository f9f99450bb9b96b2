"""The cockpit over plain HTTP (no browser): paging through instances that share a start
time, escaping, and who may open which page."""

from __future__ import annotations

import re
from contextlib import closing
from datetime import UTC, datetime

import httpx
from sqlalchemy import text

from bpm import credentials
from bpm.states import Role
from tests.browser import processes
from tests.browser.conftest import base_of
from tests.server.conftest import Server

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _session(srv: Server, name: str) -> httpx.Client:
    client = httpx.Client(base_url=base_of(srv), timeout=40)
    page = client.get("/login")
    token = _CSRF.search(page.text)
    assert token, page.text
    done = client.post(
        "/login", data={"csrf": token.group(1), "name": name, "secret": srv.secrets[name]}
    )
    assert done.status_code == 303, done.text
    return client


def test_paging_shows_every_instance_once_across_shared_start_times(cockpit: Server) -> None:
    engine = cockpit.runtime.engine
    started = [
        str(engine.start(processes.REVIEW, {}, business_key=f"page-{n}").id) for n in range(120)
    ]
    # 70 of them started at the same instant: the tie spans the first two pages.
    same = datetime(2030, 1, 1, tzinfo=UTC)
    with cockpit.db.transaction() as conn:
        conn.execute(
            text("UPDATE process_instances SET started_at = :at WHERE id = ANY(:ids)"),
            {"at": same, "ids": started[10:80]},
        )
    seen: list[str] = []
    with closing(_session(cockpit, "viewer")) as client:
        url: str | None = f"/instances?process={processes.REVIEW}"
        while url is not None:
            page = client.get(url)
            assert page.status_code == 200, page.text
            seen += re.findall(r'data-instance="([^"]+)"', page.text)
            following = re.search(r'href="\?([^"]+)" id="next-page"', page.text)
            url = "/instances?" + following.group(1).replace("&amp;", "&") if following else None
    assert sorted(seen) == sorted(set(seen))
    assert set(started) <= set(seen)


def test_what_a_user_wrote_is_shown_as_text(cockpit: Server) -> None:
    key = '<script>alert("x")</script>'
    started = cockpit.runtime.engine.start(processes.REVIEW, {"note": key}, business_key=key)
    with closing(_session(cockpit, "viewer")) as client:
        page = client.get(f"/instances/{started.id}")
        listing = client.get("/instances", params={"business_key": key})
    for html in (page.text, listing.text):
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert" in html
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and page.headers["x-frame-options"] == "DENY"


def test_each_role_opens_only_its_pages(cockpit: Server) -> None:
    with closing(_session(cockpit, "clerk")) as clerk:
        assert clerk.get("/tasks").status_code == 200
        assert clerk.get("/incidents").status_code == 403
        assert clerk.get("").headers["location"] == "/cockpit/tasks"
    with closing(_session(cockpit, "viewer")) as viewer:
        assert viewer.get("/incidents").status_code == 200
        assert viewer.get("/tasks").status_code == 403
    anonymous = httpx.get(base_of(cockpit) + "/incidents", timeout=40)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"].startswith("/cockpit/login?next=")


def test_logging_out_ends_the_session(cockpit: Server) -> None:
    with closing(_session(cockpit, "ops")) as client:
        page = client.get("/incidents")
        token = _CSRF.search(page.text)
        assert token
        assert client.post("/logout", data={"csrf": token.group(1)}).status_code == 303
        assert client.get("/incidents").status_code == 303  # to the login page again


def test_the_processes_page_counts_instances_by_state(cockpit: Server) -> None:
    before = _charge_row(cockpit)
    processes.failed_charge(cockpit.runtime, "counted")
    after = _charge_row(cockpit)
    running, failed, incidents = (after[n] - before[n] for n in (3, 4, 8))
    assert (running, failed, incidents) == (0, 1, 1)


def _charge_row(srv: Server) -> list[int]:
    """The cells of cockpit_charge version 1's row (numbers only where they are numbers)."""
    with closing(_session(srv, "viewer")) as client:
        page = client.get("/processes").text
    row = page.split(f'data-definition="{processes.CHARGE}:1"')[1].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in row.split("<td>")[1:]]
    return [int(c) if c.isdigit() else -1 for c in cells]


def test_a_bad_input_or_a_refusal_is_an_html_page(cockpit: Server) -> None:
    with closing(_session(cockpit, "viewer")) as client:
        bad = client.get("/instances", params={"started_after": "yesterday"})
        missing = client.get("/instances/00000000-0000-0000-0000-000000000000")
        refused = client.post("/incidents/act", data={"action": "retry"})
    assert bad.status_code == 400 and "is not a date" in bad.text
    assert missing.status_code == 404 and 'id="error-message"' in missing.text
    assert refused.status_code == 403 and "CSRF token" in refused.text
    for answer in (bad, missing, refused):
        assert answer.headers["content-type"].startswith("text/html")


def test_a_user_works_only_on_the_tasks_offered_to_them(cockpit: Server) -> None:
    engine = cockpit.runtime.engine
    review = engine.start(processes.REVIEW, {}, business_key="not-for-anna-limits")
    ship = engine.start(processes.SHIP, {}, business_key="not-for-anna")
    cockpit.runtime.run_until_idle(timeout=10)
    (review_task,) = engine.user_tasks(instance_id=review.id)
    (ship_task,) = engine.user_tasks(instance_id=ship.id)
    with closing(_session(cockpit, "desk")) as desk:  # anna of reviewers: not offered ship
        listed = desk.get("/tasks").text
        assert "not-for-anna-limits" in listed and "not-for-anna<" not in listed
        assert desk.get(f"/tasks/{ship_task['id']}").status_code == 403
        token = _CSRF.search(listed)
        assert token
        claim = desk.post(f"/tasks/{ship_task['id']}/claim", data={"csrf": token.group(1)})
        assert claim.status_code == 403
    with closing(_session(cockpit, "shipper")) as shipper:  # a starter limited to ship
        assert "not-for-anna-limits" not in shipper.get("/tasks").text
        assert shipper.get(f"/tasks/{review_task['id']}").status_code == 403
    assert engine.user_tasks(instance_id=ship.id)[0]["assignee"] is None


def test_a_credential_made_again_with_a_new_secret_ends_the_old_sessions(
    cockpit: Server,
) -> None:
    cockpit.add("temp", Role.VIEWER)
    with closing(_session(cockpit, "temp")) as old:
        assert old.get("/incidents").status_code == 200
        credentials.remove(cockpit.db, "temp")
        cockpit.add("temp", Role.VIEWER)
        assert old.get("/incidents").status_code == 303  # to the login page
    with closing(_session(cockpit, "temp")) as new:
        assert new.get("/incidents").status_code == 200
