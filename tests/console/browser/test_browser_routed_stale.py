"""A stale routed-run confirmation in a real browser (Chromium): two tabs (two
browser contexts, one operator each) on one running workflow; the first pauses it,
the second confirms the cancel it opened before and is told in place that the
workflow changed since it loaded it, with the confirmation re-read below the
message. Without script the same stale form answers with the full 409 page."""

import pytest
from django.contrib.auth.models import Permission

from storage.routed.enums import ControlCommand, WorkflowStatus
from tests.console import routedcontrol as rc
from tests.console import routedfactories as rf
from tests.console.browser.support import TIMEOUT, sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


# Chromium logs every 4xx answer as a console error; the stale form's 409 is the
# answer this journey expects, so it is set apart from the rest (a CSP violation).
CONFLICT = "Failed to load resource: the server responded with a status of 409 (Conflict)"


def second_tab(page, console_errors, *, script: bool = True):
    """Another operator's tab: a context of its own (its own session cookie)."""
    context = page.context.browser.new_context(
        viewport={"width": 1440, "height": 900}, java_script_enabled=script
    )
    other = context.new_page()
    other.set_default_timeout(TIMEOUT)
    other.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    other.on("pageerror", lambda e: console_errors.append(str(e)))
    return other


def test_a_stale_confirmation_says_in_place_that_the_workflow_changed(
    live_server, browser_page, console_errors, alice
):
    from playwright.sync_api import expect

    alice.user_permissions.add(Permission.objects.get(codename="routed_control"))
    admission, _ = rc.running("k-stale")
    wf = admission.receipt.workflow_id
    mine, theirs = browser_page, second_tab(browser_page, console_errors)
    for page in (mine, theirs):
        sign_in(page, live_server, f"/routed/workflows/{wf}")
        page.select_option("#poll-every", "0")  # a still page: only the operator moves it
        expect(page.locator("#workflow h1 .badge")).to_have_text("running")

    # The other tab opens the cancel confirmation and leaves it there.
    theirs.locator('[data-routed-action="cancel"]').click()
    confirm = theirs.locator(".inline-confirm.routed")
    confirm.locator("textarea[name=reason]").fill("duplicate order")

    # Meanwhile this tab pauses the workflow.
    mine.locator('[data-routed-action="pause"]').click()
    mine.locator(".inline-confirm.routed textarea[name=reason]").fill("provider outage")
    mine.locator('[data-confirm-action="pause"]').click()
    expect(mine.locator("#workflow h1 .badge")).to_have_text("pause requested")

    # The other tab confirms its stale form: the 409 comes back in place.
    confirm.locator('[data-confirm-action="cancel"]').click()
    warning = theirs.locator(".routed-confirm-slot .inline-confirm.routed .warning")
    expect(warning).to_contain_text("This workflow changed since you loaded it.")
    # The confirmation below it is re-read: it now cancels a workflow being paused.
    expect(theirs.locator(".inline-confirm.routed")).to_contain_text("PAUSE_REQUESTED")
    expect(theirs).to_have_url(f"{live_server.url}/routed/workflows/{wf}")
    assert (
        rc.routed().view(lambda r: r.get_workflow(wf)).record.status
        is WorkflowStatus.PAUSE_REQUESTED
    )

    # Confirming again, from the fresh form, applies.
    theirs.locator(".inline-confirm.routed textarea[name=reason]").fill("duplicate order")
    theirs.locator('[data-confirm-action="cancel"]').click()
    expect(theirs.locator("#workflow h1 .badge")).to_have_text("cancelled")
    assert [e for e in console_errors if e != CONFLICT] == []
    theirs.context.close()


def test_without_script_a_stale_form_is_the_full_409_page(
    live_server, browser_page, console_errors, alice
):
    from playwright.sync_api import expect

    alice.user_permissions.add(Permission.objects.get(codename="routed_control"))
    admission, _ = rc.running("k-stale-nojs")
    wf = admission.receipt.workflow_id
    plain = second_tab(browser_page, console_errors, script=False)
    sign_in(plain, live_server, f"/routed/workflows/{wf}")
    plain.locator('[data-routed-action="cancel"]').click()  # the link: the full page
    expect(plain).to_have_url(f"{live_server.url}/routed/actions/cancel/{wf}")
    plain.locator("textarea[name=reason]").fill("duplicate order")

    rf.control(wf, ControlCommand.PAUSE)  # another operator pauses it meanwhile

    plain.locator('[data-confirm-action="cancel"]').click()
    expect(plain.locator(".warning")).to_contain_text("This workflow changed since you loaded it.")
    expect(plain.locator("form textarea[name=reason]")).to_be_visible()
    assert (
        rc.routed().view(lambda r: r.get_workflow(wf)).record.status
        is WorkflowStatus.PAUSE_REQUESTED
    )
    assert [e for e in console_errors if e != CONFLICT] == []
    plain.context.close()
