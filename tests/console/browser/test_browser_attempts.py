"""Leases about to run out, in Chromium: the preset "Leases expiring in the next 30 s"
lists running attempts the soonest expiry first among a busier fleet; after two polls
a renewal elsewhere moves one out of the window; the operator opens an attempt's page
(lease countdown, epoch and claims, outcome, its Events) and pages the lease order.
At 1440x900 and 390x844, no sideways scroll; axe-clean at 360 px in both themes."""

import re

import pytest

from storage import LeaseRef, seconds
from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

ROWS = "#live tbody tr"


def seed() -> None:
    for n in range(40):
        f.running(f"sync-{n:02d}", lease=600 + n, kind="sync.crm")  # minutes left
    for n in range(20):
        f.completed(f"done-{n:02d}")
    # Last, so their 22-28 s are still running when the page first reads them.
    for n in range(4):
        f.running(f"charge-{n}", lease=22 + 2 * n, kind="billing.charge")
    f.event("hook", work_id="charge-0")


@pytest.mark.parametrize("size", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}])
def test_leases_about_to_expire_then_one_attempt(live_server, browser_page, console_errors, size):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(size)
    seed()
    sign_in(page, live_server, "/views")
    page.locator("a", has_text="Leases expiring in the next 30 s").click()
    page.wait_for_url(re.compile(r"/executions\?expiring=30s&sort=lease$"))
    expect(page.locator(ROWS)).to_have_count(4)
    expect(page.locator(ROWS).first).to_contain_text("charge-0")

    page.select_option("#poll-every", "2")
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass
    # Its worker renews charge-3's lease for ten minutes: the next poll drops it.
    with page.expect_response(lambda r: "stamp=" in r.url and r.status == 200, timeout=15_000):
        lease = LeaseRef("charge-3-x1", "worker-1", 1)
        f.transact(lambda tx: tx.renew(lease, tx.now + seconds(600)))
    expect(page.locator(ROWS)).to_have_count(3)
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    page.locator(ROWS).first.locator("a[href^='/attempts/']").click()
    page.wait_for_url(f"{live_server.url}/attempts/charge-0-x1")
    expect(page.locator("#attempt time.countdown")).to_be_visible()
    expect(page.locator("#attempt")).to_contain_text("claimed 1 time")
    expect(page.locator("#attempt a[href='/events/hook']")).to_be_visible()
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass
    expect(page.locator("#attempt time.countdown")).to_be_visible()
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    # The whole lease order, a page of 25 and the next.
    page.goto(f"{live_server.url}/executions?sort=lease&size=25")
    expect(page.locator(ROWS)).to_have_count(25)
    page.locator("#live a[rel=next]").click()
    page.wait_for_url(lambda url: "after=" in url)
    expect(page.locator(ROWS)).to_have_count(19)
    assert sideways(page) == 0
    assert console_errors == []
