"""Everything about a correlation key, in Chromium: from a waiting Work's key chip to
the key's page (its owner, its Wait, the Events carrying it among a busier history),
where after two polls a new Event carrying the key arrives live; then the older page
by keyset and the Event stream filtered by the key. At 1440x900 and 390x844, no
sideways scroll, and axe-clean at 360 px in both themes."""

import re

import pytest

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

# A key as a shop's webhook sends it: a slash in the source, odd characters in the ID.
KEY = ("shop/eu", "order 7/é?&#")
ROWS = "#key-events-h ~ .table-wrap tbody tr"


def seed() -> None:
    f.parked("order-7", keys=[KEY], wait_keys=[KEY])
    for n in range(55):
        f.event(f"ev-{n:02d}", type="order.updated", keys=[KEY])
        f.event(f"noise-{n:02d}", type="order.updated", keys=[("shop/eu", f"order {n}")])


@pytest.mark.parametrize("size", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}])
def test_from_a_key_chip_to_everything_about_the_key(
    live_server, browser_page, console_errors, size
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(size)
    seed()
    sign_in(page, live_server, "/works/order-7")
    page.locator("dd a.key", has_text="order 7/é?&#").click()
    page.wait_for_url(re.compile(r"/keys\?source=shop%2Feu&id=order\+7%2F"))
    expect(page.locator("h1")).to_contain_text("shop/eu/order 7/é?&#")
    expect(page.locator("#key-work-h + .table-wrap a[href='/works/order-7']")).to_be_visible()
    expect(page.locator("#key")).to_contain_text("order-7-wait")
    expect(page.locator(ROWS)).to_have_count(50)
    expect(page.locator(ROWS).first).to_contain_text("order.updated")

    page.select_option("#poll-every", "2")
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass
    with page.expect_response(lambda r: "stamp=" in r.url and r.status == 200, timeout=15_000):
        f.event("arrived", type="order.cancelled", keys=[KEY])
    expect(page.locator(ROWS).first).to_contain_text("order.cancelled")
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    page.locator("#key a[rel=next]").click()
    page.wait_for_url(lambda url: "before=" in url)
    expect(page.locator(ROWS)).to_have_count(6)  # 56 Events carry the key
    assert sideways(page) == 0

    page.locator("a", has_text="In the Event stream").click()
    page.wait_for_url(re.compile(r"/events\?key_source="))
    expect(page.locator("#events tbody tr")).to_have_count(50)
    expect(page.locator("#events tbody tr").first).to_contain_text("order.cancelled")
    assert sideways(page) == 0
    assert console_errors == []
