"""Search and inline logs in a real browser (Debian's Chromium through Playwright):
an Event ID prefix from an alert lands on the Event, a bare ``failed`` offers
``state:failed`` as a link that filters the list, and a failed attempt's log tail
is readable on its Work page without a download."""

import pytest

from storage import ExecutionState, WorkState
from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def search(page, text: str) -> None:
    page.fill("input[name=q]", text)
    page.click(".search button[type=submit]")
    page.wait_for_load_state()


def test_an_event_id_prefix_lands_on_the_event_and_failed_suggests_the_filter(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    f.work("charge-1", kind="billing.charge")
    f.failed("charge-2", kind="billing.charge")
    f.event("evt_01JD7Q4Z8K3M", work_id="charge-1", type="stripe.charge.failed")
    f.event("evt_01JD9X", type="stripe.charge.succeeded")  # shares only "evt_01JD"
    sign_in(page, live_server, "/")

    search(page, "evt_01JD7Q")
    expect(page).to_have_url(f"{live_server.url}/events/evt_01JD7Q4Z8K3M")
    expect(page.locator("main")).to_contain_text("stripe.charge.failed")

    page.goto(f"{live_server.url}/")
    search(page, "failed")
    suggestion = page.locator(".suggestions a", has_text="state:failed")
    expect(suggestion).to_be_visible()
    suggestion.click()
    expect(page).to_have_url(f"{live_server.url}/?state=failed")
    expect(page.locator("#workspace td.id a")).to_have_count(1)
    expect(page.locator("#workspace td.id a", has_text="charge-2")).to_be_visible()
    assert console_errors == []


def test_a_failed_attempts_log_tail_is_visible_on_its_work_page(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    body = "".join(f"step {n}: ok\n" for n in range(200)) + "ERROR: card_declined (402)\n"
    log = f.publish(body.encode())
    x = f.running("charge-9", kind="billing.charge")
    f.finish(
        x.id,
        state=ExecutionState.FAILED,
        work_state=WorkState.READY,
        message="card declined",
        artifacts=[log],
    )
    sign_in(page, live_server, "/works/charge-9")

    tail = page.locator(".artifact-preview[open] pre.artifact-tail")
    expect(tail).to_be_visible()
    expect(tail).to_contain_text("ERROR: card_declined (402)")
    expect(tail).not_to_contain_text("step 0: ok")
    expect(page.locator(".artifact-preview summary").first).to_contain_text("attempt 1 · log")
    expect(page.locator(".artifact-preview summary").first).to_contain_text("SHA-256 matches")
    page.click("text=Show all 201 lines")
    expect(page.locator(".artifact-whole pre")).to_contain_text("step 0: ok")
    assert console_errors == []
