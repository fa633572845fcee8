"""A Work in the past, in Chromium (issue 32): an operator on a Work's page opens it as
of an Event three attempts ago and sees the attempt count, state and Waits of that
moment, then as of the moment it parked, then what changed since: each transaction
with its Event, actor and fields; then the dashboard's counts as of that moment. No
sideways scroll at 360 px, axe-clean in both themes, the way back to now on every
page."""

import re

import pytest

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

WORK = "charge/2026-12-06/" + "x" * 60  # a long ID with slashes: it must wrap at 360 px


def seed() -> None:
    """Attempts 1 and 2 fail; attempt 3 parks on a Wait for approval, is woken and
    fails too; an operator's retry (a manual Event by operator:alice) starts attempt
    4, which completes."""
    f.failed_parked_retried(
        WORK, kind="billing.charge", topic="charge", failures=2, wait_id="approval-wait"
    )


def test_a_work_as_of_an_event_three_attempts_ago_and_what_changed_since(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    seed()
    sign_in(page, live_server, f"/works/{WORK}")
    expect(page.locator("h1")).to_contain_text("completed")

    # The Event accepted after attempt 1 failed: three attempts ago.
    page.locator(".tl-item", has_text="charge.declined").first.get_by_role(
        "link", name="as of"
    ).click()
    page.wait_for_url(re.compile(r"\?as_of=%23\d+$"))
    banner = page.locator(".banner-past")
    expect(banner).to_contain_text("As it was at")
    expect(banner).to_contain_text("Now it is completed")
    facts = page.locator("dl.kv")
    expect(facts.locator("div", has_text="Attempts")).to_contain_text("1")
    expect(facts.locator("div", has_text="State")).to_contain_text("ready")
    expect(page.locator("#then-attempts-h + .table-wrap tbody tr")).to_have_count(1)
    expect(page.get_by_text("No Waits at that moment.")).to_be_visible()
    expect(page.locator("text=Retry…")).to_have_count(0)  # the past does not act
    assert fits_and_passes_axe(page) == []

    # As of the moment it parked: three attempts, waiting, the Wait active.
    page.get_by_role("link", name="Back to now").click()
    page.wait_for_url(re.compile(r"/works/charge[^?]*$"))
    page.locator(".tl-item", has_text="charge.parked").get_by_role("link", name="as of").click()
    page.wait_for_url(re.compile(r"\?as_of=%23\d+$"))
    expect(facts.locator("div", has_text="Attempts")).to_contain_text("3")
    expect(facts.locator("div", has_text="State")).to_contain_text("waiting")
    waits = page.locator("section", has=page.locator("#then-waits-h"))
    expect(waits).to_contain_text("approval-wait")
    expect(waits).to_contain_text("active")
    assert fits_and_passes_axe(page) == []

    # What changed since: the operator's retry, by its Event and actor.
    page.get_by_role("link", name="What changed since").click()
    page.wait_for_url(re.compile(r"/changes/charge.*\?from=%23\d+$"))
    retry = page.locator("li.change", has_text="operator:alice")
    expect(retry).to_contain_text("core.manual")
    expect(retry).to_contain_text(re.compile(r"v\d+"))
    expect(retry).to_contain_text("attempt 4")
    woken = page.locator("li.change", has_text="approval.granted")
    expect(woken.locator("li", has_text="Wait approval-wait")).to_contain_text("woken")
    assert fits_and_passes_axe(page) == []

    # From a transaction to the Work just after it, and back to now.
    retry.get_by_role("link", name="the Work after it").click()
    page.wait_for_url(re.compile(r"\?as_of=v\d+$"))
    expect(facts.locator("div", has_text="Attempts")).to_contain_text("4")
    page.get_by_role("link", name="Back to now").click()
    page.wait_for_url(re.compile(r"/works/charge[^?]*$"))
    expect(page.locator("h1")).to_contain_text("completed")

    # The dashboard's counts as of the moment it parked, from its form.
    parked = f.transact(lambda tx: tx.event("parked").sequence)
    page.goto(f"{live_server.url}/dashboard")
    page.get_by_label("Work counts as of").fill(f"#{parked}")
    page.get_by_role("button", name="Show then").click()
    page.wait_for_url(re.compile(r"/dashboard\?as_of=%23\d+$"))
    expect(page.locator(".banner-past")).to_contain_text("Work counts as they were at")
    waiting = page.locator("tr", has=page.locator("th", has_text="waiting"))
    expect(waiting.locator("td").first).to_have_text("1")
    assert fits_and_passes_axe(page) == []
    assert console_errors == []
