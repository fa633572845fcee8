"""Bulk beyond the cap in Chromium, at 10,001 eligible Work (built with the bulk
factory, the real cap): from the exhausted list, after two polls, "Retry all matching"
opens a confirmation that first says the selection is over the 10,000 one action takes,
how many, and what to do; a narrower filter it offers opens a confirmation under the
cap. At 1440x900 and 390x844 no sideways scroll; axe-clean at 360 px in both themes."""

import re

import pytest

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


@pytest.mark.parametrize("size", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}])
def test_retry_all_over_the_cap_says_so_and_offers_narrower(
    live_server, browser_page, console_errors, size
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(size)
    f.exhausted_many([f"a{i:05d}" for i in range(6_000)], kind="sync.crm")
    f.exhausted_many([f"b{i:05d}" for i in range(4_001)], kind="billing.charge")
    sign_in(page, live_server, "/?is=exhausted")
    page.select_option("#poll-every", "2")
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass
    expect(page.locator(".count")).to_contain_text("10001 Work match the filter")

    page.locator("#workspace button[value=retry-all]").click()
    page.wait_for_url(re.compile(r"/actions/bulk\?"))
    over = page.locator("section.over-cap")
    expect(over).to_be_visible()
    expect(over.locator("h2")).to_have_text(
        "Over the cap: 10,001 Work to retry, and one bulk action takes 10,000"
    )
    expect(over).to_contain_text("narrow the filter until it selects 10,000 or fewer")
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    over.locator("a", has_text="billing.charge").click()
    page.wait_for_url(re.compile(r"kind=billing.charge"))
    expect(page.locator("h1")).to_have_text("Retry 4,001 Work")
    expect(page.locator("section.over-cap")).to_have_count(0)
    assert sideways(page) == 0
    assert console_errors == []
