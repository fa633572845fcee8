"""Routed-run actions in a real browser (Chromium): pause a running workflow, watch
it reach Paused at the boundary the supervisor reports and its envelope freeze,
resume it, amend its limit; cancel another and see its attempt fenced; restart a
failed one from the current alias and follow the provenance link back; a viewer
sees no buttons and a forged POST is refused.

One journey in one page on purpose: each step starts from the state the last one
left, as an operator's session does, and the browser starts once (CI budget)."""

import pytest
from django.contrib.auth.models import Permission

from console.actions.common import new_token
from storage.routed.enums import AttemptStatus, WorkflowStatus
from storage.routed.errors import LeaseFenced
from tests.console import routedcontrol as rc
from tests.console import routedfactories as rf
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # one long journey (about 20-30 s under load): many steps, one browser
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def status_of(wf: str) -> WorkflowStatus:
    return rc.routed().view(lambda r: r.get_workflow(wf)).record.status  # type: ignore[arg-type]


def failed_workflow() -> str:
    """A workflow whose attempt failed and which the supervisor ended FAILED."""
    admission, _ = rf.failed()
    return admission.receipt.workflow_id


def act(page, action: str, reason: str) -> None:
    """Open the action's confirmation in place, give a reason and confirm it."""
    page.locator(f'[data-routed-action="{action}"]').click()
    form = page.locator(".inline-confirm.routed form")
    form.locator("textarea[name=reason]").fill(reason)
    form.locator(f'[data-confirm-action="{action}"]').click()


def test_an_operator_pauses_resumes_amends_cancels_and_restarts(
    live_server, browser_page, console_errors, alice
):
    import re

    from playwright.sync_api import expect

    for codename in ("routed_control", "routed_amend_limits"):
        alice.user_permissions.add(Permission.objects.get(codename=codename))
    first, _ = rc.running("k-first")
    second, second_attempt = rc.running("k-second")
    failed = failed_workflow()
    rc.alias_to("prod", rc.admitted("k-v2", version="2.0.0"))
    wf = first.receipt.workflow_id
    page = browser_page
    status = page.locator("#workflow h1 .badge")
    envelope = page.locator("#workflow .envelope")

    sign_in(page, live_server, "/routed/workflows?status=RUNNING")
    page.select_option("#poll-every", "0")  # a still page: nothing swaps under the test
    page.locator(f'#row-{wf} a[href="/routed/workflows/{wf}"]').click()
    expect(status).to_have_text("running")
    act(page, "pause", "provider outage")
    expect(status).to_have_text("pause requested")
    rc.reach_pause_boundary(wf)  # the supervisor: its attempt reached a safe point
    page.reload()
    expect(status).to_have_text("paused")
    expect(envelope).to_have_class(re.compile(r"envelope-frozen"))
    frozen = rc.routed().view(lambda r: r.get_time_envelope(wf)).record.consumed_active_duration_ms
    act(page, "resume", "provider back")
    expect(status).to_have_text("running")
    expect(envelope).not_to_have_class(re.compile(r"envelope-frozen"))
    assert (
        rc.routed().view(lambda r: r.get_time_envelope(wf)).record.consumed_active_duration_ms
        == frozen
    )
    expect(page.locator("#control-history")).to_contain_text("provider outage")

    page.locator('[data-routed-action="amend-limits"]').click()
    form = page.locator(".inline-confirm.routed form")
    expect(form.locator("input[name=max_active_duration_ms]")).to_have_value("3600000")
    form.locator("input[name=max_active_duration_ms]").fill("7200000")
    form.locator("textarea[name=reason]").fill("a long document")
    form.locator('[data-confirm-action="amend-limits"]').click()
    expect(page.locator("#amendments")).to_contain_text("a long document")
    assert rc.routed().view(lambda r: r.get_workflow(wf)).record.max_active_duration_ms == 7_200_000

    attempt_id = second_attempt.record.attempt_id
    page.goto(f"{live_server.url}/routed/workflows/{second.receipt.workflow_id}")
    page.locator('[data-routed-action="cancel"]').click()
    expect(page.locator(".inline-confirm.routed")).to_contain_text(
        f"{attempt_id}: RUNNING → CANCELLED"
    )
    expect(page.locator(".inline-confirm.routed")).to_contain_text("fenced")
    page.locator(".inline-confirm.routed textarea[name=reason]").fill("duplicate order")
    page.locator('[data-confirm-action="cancel"]').click()
    expect(status).to_have_text("cancelled")
    expect(page.locator(f"#attempt-{attempt_id} h3 .badge")).to_have_text("cancelled")
    with pytest.raises(LeaseFenced):  # the worker's late write with its old lease
        rc.end_attempt(second_attempt, AttemptStatus.SUCCEEDED)

    page.goto(f"{live_server.url}/routed/workflows/{failed}")
    expect(status).to_have_text("failed")
    page.locator('[data-routed-action="restart"]').click()
    page.locator('.inline-confirm.routed input[name=target_ref][value="prod"]').check()
    page.locator(".inline-confirm.routed textarea[name=reason]").fill("fixed in 2.0.0")
    page.locator('[data-confirm-action="restart"]').click()
    expect(page.locator("#provenance")).to_have_text(failed)
    page.locator("#provenance").click()
    expect(page).to_have_url(f"{live_server.url}/routed/workflows/{failed}")
    expect(page.locator("#control-history")).to_contain_text(f"restarted {failed} →")
    assert console_errors == []


def test_a_viewer_sees_no_buttons_and_a_forged_post_is_refused(
    live_server, browser_page, console_errors, alice
):
    from playwright.sync_api import expect

    admission, _ = rc.running("k-viewer")
    wf = admission.receipt.workflow_id
    page = browser_page  # alice without routed authority: an operator of Work only

    sign_in(page, live_server, f"/routed/workflows/{wf}")
    expect(page.locator("#workflow h1 .badge")).to_have_text("running")
    expect(page.locator("[data-routed-action]")).to_have_count(0)
    token = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    forged = page.request.post(
        f"{live_server.url}/routed/actions/cancel/{wf}",
        form={
            "csrfmiddlewaretoken": token or "",
            "reason": "x",
            "token": new_token(),
            "generation": "1",
        },
        headers={"Referer": live_server.url},
    )
    assert forged.status == 403
    assert status_of(wf) is WorkflowStatus.RUNNING
    assert console_errors == []
