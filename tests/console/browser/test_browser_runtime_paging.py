"""The Waits page in Chromium on a phone-sized viewport (390x844), with more active
Waits than a page: a real poll refreshes the first page after a Wait ends elsewhere,
then the operator follows "Newer" to the second page (which does not poll) and
"Older" back to the first (which polls again), with no sideways scroll."""

import pytest

from storage import WaitState
from tests.console import factories as f
from tests.console.browser.support import sign_in
from tests.console.support.paging import parked_at_once

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

PHONE = {"width": 390, "height": 844}
ROW_IDS = "#live tbody tr td:first-child [data-sid]"


def test_waits_page_two_and_back_on_a_phone_after_a_poll(live_server, browser_page, console_errors):
    from dataclasses import replace

    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(PHONE)
    waits = [f"wait-{n:03d}" for n in range(75)]
    parked_at_once(*waits[:40])
    parked_at_once(*waits[40:])

    sign_in(page, live_server, "/waits")
    page.select_option("#poll-every", "2")  # console.js submits the picker
    expect(page.locator("#live")).to_have_attribute("hx-trigger", "every 2s, consolewake")
    expect(page.locator(ROW_IDS)).to_have_count(50)
    expect(page.locator("#live .count")).to_contain_text("75 active waits; 50 on this page")

    # Another process ends the oldest Wait: the next poll swaps the first page in,
    # which now starts at the second oldest and takes one row from the next page.
    def end_oldest(tx) -> None:
        tx.put_wait(replace(tx.wait(waits[0]), state=WaitState.CANCELLED))

    is_swap = lambda r: "stamp=" in r.url and r.status == 200  # noqa: E731
    with page.expect_response(is_swap, timeout=15_000):
        f.transact(end_oldest)
    expect(page.locator("#live .count")).to_contain_text("74 active waits; 50 on this page")
    expect(page.locator(ROW_IDS).first).to_have_attribute("title", waits[1])
    expect(page.locator(ROW_IDS).last).to_have_attribute("title", waits[50])

    # Newer: the second page, by keyset; it does not poll.
    page.locator("#live a[rel=next]").click()
    page.wait_for_url(lambda url: "after=" in url)
    expect(page.locator(ROW_IDS)).to_have_count(24)
    expect(page.locator(ROW_IDS).first).to_have_attribute("title", waits[51])
    expect(page.locator("#live")).not_to_have_attribute("hx-trigger", "every 2s, consolewake")
    expect(page.locator("#live a[rel=next]")).to_have_count(0)
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, (width, inner)

    # Older: back to the first page, which polls again.
    page.locator("#live a[rel=prev]").click()
    page.wait_for_url(lambda url: "before=" in url)
    expect(page.locator(ROW_IDS)).to_have_count(50)
    expect(page.locator(ROW_IDS).first).to_have_attribute("title", waits[1])
    expect(page.locator("#live")).to_have_attribute("hx-trigger", "every 2s, consolewake")
    expect(page.locator("#live a[rel=prev]")).to_have_count(0)
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, (width, inner)
    assert console_errors == []
