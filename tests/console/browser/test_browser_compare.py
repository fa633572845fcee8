"""Two attempts side by side, in Chromium: an operator opens an exhausted Work from the
exhausted list, opens Compare from its attempts, and sees the failed attempt beside
the one that succeeded, what differed named in words, the log and the report diffed;
then picks two other attempts with the choosers (a plain GET form). At 1440x900 the
sides are two columns; at 360 px they stack, with no sideways scroll, axe-clean in
both themes."""

import re

import pytest

from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import TIMEOUT, sign_in
from tests.console.support import attempts as seed

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def test_an_operator_compares_the_failed_and_the_succeeded_attempt(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_default_timeout(TIMEOUT)
    seed.failed_then_succeeded_then_failed("refund-7")
    sign_in(page, live_server, "/?is=exhausted")
    page.locator("a[href='/works/refund-7']").first.click()
    page.wait_for_url(f"{live_server.url}/works/refund-7")

    page.get_by_role("link", name="Compare attempts").click()
    page.wait_for_url(f"{live_server.url}/compare/refund-7")
    compare = page.locator("#compare")
    expect(compare).to_contain_text("Chosen by default: the latest failed attempt (A)")
    expect(page.locator("#cmp-a")).to_have_value("refund-7-x3")
    expect(page.locator("#cmp-b")).to_have_value("refund-7-x1")
    expect(page.locator("#cmp-summary")).to_contain_text("Executor")
    expect(page.locator("#cmp-outcome")).to_contain_text("≠ differs")
    expect(page.locator("#cmp-outcome")).to_contain_text("card declined")
    expect(page.locator("#cmp-executor")).to_contain_text("python-3.13")
    expect(page.locator("pre.diff").first).to_contain_text("-FATAL: card declined")
    expect(page.locator("pre.diff").first).to_contain_text("+charged 12.00 EUR")

    # Wide: A and B side by side, on one line.
    a_box = page.locator("#cmp-executor dd.cmp-side").nth(0).bounding_box()
    b_box = page.locator("#cmp-executor dd.cmp-side").nth(1).bounding_box()
    assert a_box
    assert b_box
    assert abs(a_box["y"] - b_box["y"]) < 2
    assert b_box["x"] > a_box["x"]
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    # A phone: the sides stack, B under A, and nothing scrolls sideways.
    page.set_viewport_size({"width": 360, "height": 800})
    a_box = page.locator("#cmp-executor dd.cmp-side").nth(0).bounding_box()
    b_box = page.locator("#cmp-executor dd.cmp-side").nth(1).bounding_box()
    assert a_box
    assert b_box
    assert b_box["y"] > a_box["y"] + a_box["height"] - 1
    assert sideways(page) == 0
    page.set_viewport_size({"width": 1440, "height": 900})

    # The choosers: the two failed attempts, which went alike.
    page.select_option("#cmp-a", "refund-7-x2")
    page.select_option("#cmp-b", "refund-7-x3")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"/compare/refund-7\?a=refund-7-x2&b=refund-7-x3$"))
    expect(page.locator("#cmp-outcome")).to_contain_text("= same")
    expect(page.locator("#compare")).to_contain_text("the same SHA-256: not read")
    expect(page.locator("#compare-default")).to_have_count(0)
    assert fits_and_passes_axe(page) == []
    assert console_errors == []
