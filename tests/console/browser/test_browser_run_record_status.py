"""Run records by status in Chromium: the operator ticks "failed" among a mixed set,
the list keeps the failed runs; after two polls another run fails and arrives live;
its page says where each failed attempt's error can be found. At 1440x900 and
390x844, no sideways scroll; axe-clean at 360 px in both themes."""

import pytest

from tests.console import run_record_factories as rf
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

ROWS = "#run-records tbody tr"


@pytest.mark.parametrize("size", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}])
def test_failed_runs_then_where_the_error_is(live_server, browser_page, console_errors, size):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(size)
    for n in range(12):
        rf.checkout(f"checkout/{n}")
    rf.payment("payment/spent", failures=9)
    rf.payment("payment/ok", failures=1)
    sign_in(page, live_server, "/run-records")
    expect(page.locator(ROWS)).to_have_count(14)
    page.locator("input[name=status][value=failed]").check()
    page.locator("form.filters button[type=submit]").click()
    page.wait_for_url(lambda url: "status=failed" in url)
    expect(page.locator(ROWS)).to_have_count(1)
    expect(page.locator(ROWS).first).to_contain_text("payment/spent")
    expect(page.locator("#run-records .count")).to_contain_text("of the 14 run records read")

    page.select_option("#poll-every", "2")
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass
    with page.expect_response(lambda r: "stamp=" in r.url and r.status == 200, timeout=15_000):
        rf.payment("payment/late", failures=9)
    expect(page.locator(ROWS)).to_have_count(2)
    expect(page.locator(ROWS).first).to_contain_text("payment/late")
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    page.locator(ROWS).first.locator("a", has_text="payment/late").click()
    page.wait_for_url(f"{live_server.url}/run-records/payment/late")
    note = page.locator(".failure-note").first
    expect(note).to_contain_text(
        "its error is in data/logs/simulate.log: the line 'run payment/late"
    )
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []
    assert console_errors == []
