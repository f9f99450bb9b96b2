"""The cockpit in a real browser: log in, find a failed instance, see its failed node, retry
it from the page, bulk-retry incidents by filter, complete a user task through its form,
and the refusals (a viewer's change, a form without its CSRF token)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

import bpm.demo
from bpm.cli.demo import SAGA_ORDER
from bpm.cli.demo import _run_saga as run_saga
from tests.browser import processes
from tests.browser.conftest import base_of, log_in, shot
from tests.server.conftest import Server

if TYPE_CHECKING:
    from playwright.sync_api import Page

SAGA_BPMN = Path(bpm.demo.__file__).parent / "order_saga.bpmn"


def test_a_login_needs_the_right_secret(page: Page, cockpit: Server) -> None:
    page.goto(base_of(cockpit) + "/incidents")
    assert "/cockpit/login" in page.url
    page.fill("input[name=name]", "ops")
    page.fill("input[name=secret]", "not-the-secret")
    page.click("#login")
    assert page.locator(".error").inner_text().startswith("No credential of that name")
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["bpm_cockpit"]["httpOnly"] and cookies["bpm_cockpit"]["sameSite"] == "Lax"
    log_in(page, cockpit, "ops")
    assert page.locator("header .who").inner_text().startswith("ops (operator)")


def test_an_operator_finds_a_failed_instance_and_retries_it(page: Page, cockpit: Server) -> None:
    instance = processes.failed_charge(cockpit.runtime, "order-failed-1")
    log_in(page, cockpit, "ops")
    page.goto(base_of(cockpit) + "/instances")
    page.fill("input[name=business_key]", "order-failed-1")
    page.click("#search")
    page.click(f"tr[data-instance='{instance}'] a")
    assert page.locator("#instance-state").inner_text() == "FAILED"
    failed = page.locator("#diagram svg g[data-node='charge']")
    assert failed.get_attribute("data-status") == "failed"
    assert "card declined for order-failed-1" in page.locator("#failures").inner_text()
    shot(page, "instance_failed")
    page.click("#incidents button.retry")
    assert page.locator("#instance-state").inner_text() == "COMPLETED"
    done = page.locator("#diagram svg g[data-node='done']")
    assert done.get_attribute("data-status") == "visited"
    actors = page.locator("#history td.actor").all_inner_texts()
    assert "ops" in actors, actors
    assert cockpit.runtime.engine.show(instance)["state"] == "COMPLETED"


def test_an_operator_retries_twenty_incidents_by_filter(page: Page, cockpit: Server) -> None:
    for n in range(20):
        processes.failed_charge(cockpit.runtime, f"bulk-{n}")
    log_in(page, cockpit, "ops")
    page.goto(base_of(cockpit) + "/incidents")
    page.fill("input[name=message]", "card declined for bulk-")
    page.click("#filter")
    assert page.locator("#incident-count").inner_text().startswith("20 open incidents")
    page.click("#bulk-retry")
    assert page.locator("#confirm-count").get_attribute("data-count") == "20"
    shot(page, "bulk_confirm")
    page.click("#confirm")
    assert page.locator("#acted").get_attribute("data-done") == "20"
    page.goto(base_of(cockpit) + "/incidents?message=card+declined+for+bulk-")
    assert page.locator("#incident-count").inner_text().startswith("0 open incidents")
    states = {i["state"] for i in cockpit.runtime.engine.find_instances(key=processes.CHARGE)}
    assert "FAILED" not in states or _only_other_failures(cockpit)


def _only_other_failures(srv: Server) -> bool:
    failed = srv.runtime.engine.find_instances(key=processes.CHARGE, state="FAILED")
    return all(not str(i.get("business_key", "")).startswith("bulk-") for i in failed)


def test_a_user_completes_a_task_through_its_form(page: Page, cockpit: Server) -> None:
    started = cockpit.runtime.engine.start(processes.REVIEW, {}, business_key="review-1")
    cockpit.runtime.run_until_idle(timeout=10)
    log_in(page, cockpit, "clerk")
    page.goto(base_of(cockpit) + "/tasks")
    row = page.locator("#tasks tr", has_text="review-1")
    row.locator("button.claim").click()
    page.click("#complete")  # the amount is required and empty
    error = page.locator("[data-field='amount'] .error")
    assert "required" in error.inner_text()
    shot(page, "task_form_error")
    assert cockpit.runtime.engine.user_tasks(instance_id=started.id)  # nothing completed
    page.fill("#f-amount", "42")
    page.check("#f-approved")
    page.click("#complete")
    assert "completed Review order" in page.locator(".notice").inner_text()
    cockpit.runtime.run_until_idle(timeout=10)
    shown = cockpit.runtime.engine.show(started.id)
    assert shown["state"] == "COMPLETED"
    assert shown["variables"]["amount"] == 42 and shown["variables"]["approved"] is True


def test_a_group_member_sees_the_task_and_claims_it_as_their_user(
    page: Page, cockpit: Server
) -> None:
    started = cockpit.runtime.engine.start(processes.REVIEW, {}, business_key="review-group")
    cockpit.runtime.run_until_idle(timeout=10)
    log_in(page, cockpit, "desk")
    page.goto(base_of(cockpit) + "/tasks")
    page.locator("#tasks tr", has_text="review-group").locator("button.claim").click()
    assert "assignee: anna" in page.locator("main").inner_text()
    (task,) = cockpit.runtime.engine.user_tasks(instance_id=started.id)
    assert task["assignee"] == "anna"


def test_a_viewer_sees_no_buttons_and_is_refused_a_change(page: Page, cockpit: Server) -> None:
    instance = processes.failed_charge(cockpit.runtime, "order-viewed")
    log_in(page, cockpit, "viewer")
    page.goto(base_of(cockpit) + f"/instances/{instance}")
    assert page.locator("main button").count() == 0
    page.goto(base_of(cockpit) + "/incidents")
    assert page.locator("main button").count() == 1  # the filter's (a GET: it changes nothing)
    assert page.locator("main form[method=post]").count() == 0
    token = page.locator("header input[name=csrf]").get_attribute("value")
    incident = cockpit.runtime.engine.show(instance)["incidents"][0]["id"]
    answer = page.request.post(
        base_of(cockpit) + "/incidents/act",
        form={"csrf": token or "", "action": "retry", "incident": incident},
    )
    assert answer.status == 403
    assert cockpit.runtime.engine.show(instance)["state"] == "FAILED"


def test_a_form_without_its_csrf_token_is_refused(page: Page, cockpit: Server) -> None:
    instance = processes.failed_charge(cockpit.runtime, "order-csrf")
    log_in(page, cockpit, "ops")
    incident = cockpit.runtime.engine.show(instance)["incidents"][0]["id"]
    url = base_of(cockpit) + "/incidents/act"
    missing = page.request.post(url, form={"action": "retry", "incident": incident})
    wrong = page.request.post(url, form={"csrf": "x", "action": "retry", "incident": incident})
    assert (missing.status, wrong.status) == (403, 403)
    # Nor does a request with the token but without the session's cookie.
    token = page.locator("header input[name=csrf]").get_attribute("value") or ""
    bare = httpx.post(url, data={"csrf": token, "action": "retry", "incident": incident})
    assert bare.status_code in (303, 403)
    assert cockpit.runtime.engine.show(instance)["state"] == "FAILED"


def test_a_user_starts_a_process_through_its_start_form(page: Page, cockpit: Server) -> None:
    log_in(page, cockpit, "clerk")
    page.goto(base_of(cockpit) + "/tasks")
    page.click(f"#startable a[href$='/start/{processes.REVIEW}']")
    page.fill("#business_key", "started-on-the-page")
    page.click("#start")  # the customer is required
    assert "required" in page.locator("[data-field='customer'] .error").inner_text()
    assert not cockpit.runtime.engine.find_instances(business_key="started-on-the-page")
    page.fill("#f-customer", "ACME <b>Ltd</b>")
    page.click("#start")
    assert "started cockpit_review" in page.locator(".notice").inner_text()
    cockpit.runtime.run_until_idle(timeout=10)
    (found,) = cockpit.runtime.engine.find_instances(business_key="started-on-the-page")
    shown = cockpit.runtime.engine.show(found["id"])
    assert shown["variables"]["customer"] == "ACME <b>Ltd</b>"
    page.goto(base_of(cockpit) + "/tasks")
    assert page.locator("#tasks tr", has_text="started-on-the-page").count() == 1


def test_a_user_completes_a_task_through_a_camunda_form(page: Page, cockpit: Server) -> None:
    started = cockpit.runtime.engine.start(processes.SHIP, {}, business_key="ship-1")
    cockpit.runtime.run_until_idle(timeout=10)
    log_in(page, cockpit, "clerk")
    page.goto(base_of(cockpit) + "/tasks")
    page.locator("#tasks tr", has_text="ship-1").locator("button.claim").click()
    assert "Where does the parcel go?" in page.locator("main").inner_text()
    page.fill("#f-address", "Mai")  # shorter than its minLength
    page.fill("#f-parcels", "0")  # under its min
    page.click("#complete")
    assert "at least 5 characters" in page.locator("[data-field='address'] .error").inner_text()
    assert "at least 1" in page.locator("[data-field='parcels'] .error").inner_text()
    shot(page, "camunda_form_error")
    assert cockpit.runtime.engine.user_tasks(instance_id=started.id)  # nothing completed
    page.fill("#f-address", "Main Street 1")
    page.fill("#f-parcels", "2")
    page.select_option("#f-carrier", "courier")
    page.check("#f-fragile")
    page.check("[data-field='extras'] input[value='gift']")
    page.fill("#f-note", "ring twice")
    page.click("#complete")
    assert "completed Ship parcel" in page.locator(".notice").inner_text()
    cockpit.runtime.run_until_idle(timeout=10)
    variables = cockpit.runtime.engine.show(started.id)["variables"]
    assert variables == {
        "address": "Main Street 1",
        "parcels": 2,
        "carrier": "courier",
        "fragile": True,
        "extras": ["gift"],
        "note": "ring twice",
    }


def test_an_operator_resolves_selected_incidents(page: Page, cockpit: Server) -> None:
    made = [processes.failed_charge(cockpit.runtime, f"picked-{n}") for n in range(3)]
    log_in(page, cockpit, "ops")
    page.goto(base_of(cockpit) + "/incidents?message=card+declined+for+picked-")
    page.check("#select-all")  # the page's script ticks every row
    assert page.locator("input.pick:checked").count() == 3
    page.once("dialog", lambda dialog: dialog.accept())  # "Resolve the selected incidents?"
    page.click("#selected-resolve")
    assert page.locator("#acted").get_attribute("data-done") == "3"
    for instance in made:
        (incident,) = cockpit.runtime.engine.show(instance)["incidents"]
        assert incident["state"] == "RESOLVED"


def test_an_operator_sets_a_variable_and_cancels_the_instance(page: Page, cockpit: Server) -> None:
    instance = processes.failed_charge(cockpit.runtime, "order-edited")
    log_in(page, cockpit, "ops")
    page.goto(base_of(cockpit) + f"/instances/{instance}")
    page.fill("input[name=name]", "orderId")
    page.fill("input[name=value]", '"order-fixed"')
    page.click("#set-variable")
    assert "variable orderId set" in page.locator(".notice").inner_text()
    assert cockpit.runtime.engine.show(instance)["variables"]["orderId"] == "order-fixed"
    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel this instance?"
    page.click("#cancel-instance")
    assert page.locator("#instance-state").inner_text() == "CANCELLED"
    history = cockpit.runtime.engine.trace(instance)
    changed = [e for e in history if e["type"] == "VariablesChanged"][-1]
    assert changed["actor"] == "ops" and changed["cause"] == "cockpit set variable orderId by ops"
    assert any(e["actor"] == "ops" and e["type"] == "InstanceCancelled" for e in history), [
        (e["type"], e.get("actor")) for e in history
    ]


def test_a_process_shows_its_heatmap_and_where_instances_are(page: Page, cockpit: Server) -> None:
    processes.failed_charge(cockpit.runtime, "heat-1")
    log_in(page, cockpit, "viewer")
    page.goto(base_of(cockpit) + "/processes")
    page.locator(f"tr[data-definition='{processes.CHARGE}:1'] a.heatmap").click()
    charge = page.locator("#diagram svg g[data-node='charge']")
    assert charge.get_attribute("data-status") == "failed"
    assert int(charge.get_attribute("data-entered") or 0) >= 1
    taken = page.locator("#diagram svg g[data-flow='Flow_start_charge']")
    assert int(taken.get_attribute("data-count") or 0) >= 1
    assert (
        int(page.locator("#now tr[data-node='charge'][data-state='FAILED'] td").last.inner_text())
        >= 1
    )
    shot(page, "process_heatmap")


def test_an_instance_shows_its_saga_in_order(page: Page, cockpit: Server) -> None:
    """The demo's order saga (BPMN): shipping fails, the card is refunded, then the stock
    released; the page lists each compensation in order and marks the undone activities."""
    saga = run_saga(cockpit.runtime, SAGA_BPMN, replace(SAGA_ORDER, business_key="saga-1"))
    assert saga.compensated == ["charge", "reserve"], saga.compensated
    log_in(page, cockpit, "viewer")
    page.goto(base_of(cockpit) + f"/instances/{saga.instance['id']}")
    steps = page.locator("#saga li").all_inner_texts()
    done = [s.split()[3] for s in steps if " CompensationCompleted " in s]
    assert done == ["charge", "reserve"], steps
    for node in ("charge", "reserve"):
        marked = page.locator(f"#diagram svg g[data-node='{node}']")
        assert marked.get_attribute("data-status") == "compensated"
    shot(page, "instance_saga")


def test_a_user_starts_a_process_through_a_camunda_start_form(page: Page, cockpit: Server) -> None:
    log_in(page, cockpit, "clerk")
    page.goto(base_of(cockpit) + f"/start/{processes.SHIP}")
    page.fill("#business_key", "ship-started")
    page.fill("#f-address", "x")
    page.click("#start")
    assert "at least 5 characters" in page.locator("[data-field='address'] .error").inner_text()
    assert not cockpit.runtime.engine.find_instances(business_key="ship-started")
    page.fill("#f-address", "Harbour Road 7")
    page.click("#start")
    assert "started cockpit_ship" in page.locator(".notice").inner_text()
    (found,) = cockpit.runtime.engine.find_instances(business_key="ship-started")
    variables = cockpit.runtime.engine.show(found["id"])["variables"]
    assert variables["address"] == "Harbour Road 7" and variables["fragile"] is False
