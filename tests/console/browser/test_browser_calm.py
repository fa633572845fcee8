"""Calm live lists in Chromium: a poll that brings a new row above the first one shown
leaves the list still and says "1 new, show"; the button brings it in; a 204 renews
the stamp the next poll sends."""

import pytest

from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def is_poll(response) -> bool:
    return "stamp=" in response.url


def _holding_back_w3(page, live_server):
    """A calm Work list polling every 2 s that shows w2 first and holds back w3,
    created after it loaded ("1 new, show"); its first ID cell."""
    from playwright.sync_api import expect

    for name in ("w1", "w2"):
        f.work(name)
    sign_in(page, live_server, "/")
    page.select_option("#poll-every", "2")
    page.wait_for_selector("#workspace[data-calm][hx-trigger='every 2s, consolewake']")
    page.mouse.move(0, 0)  # not over the rows: that alone would hold a swap back
    first = page.locator("#workspace tbody tr td.id a").first
    expect(first).to_have_text("w2")
    with page.expect_response(lambda r: is_poll(r) and r.status == 200, timeout=15_000):
        f.work("w3")
    expect(page.locator("#workspace [data-calm-reveal]")).to_have_text("1 new, show")
    return first


def test_a_new_row_waits_above_a_still_list_until_shown(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    for name in ("w1", "w2", "w3"):
        f.work(name)
    sign_in(page, live_server, "/")
    page.select_option("#poll-every", "2")
    page.wait_for_selector("#workspace[data-calm][hx-trigger='every 2s, consolewake']")
    page.mouse.move(0, 0)  # not over the rows: that alone would hold a swap back
    first = page.locator("#workspace tbody tr td.id a").first
    expect(first).to_have_text("w3")

    # A change elsewhere: the poll answers 204 and brings the stamp as it is now.
    with page.expect_response(lambda r: is_poll(r) and r.status == 204, timeout=15_000) as got:
        f.transact(lambda tx: tx.kv_put("test", "note", b"nothing a page shows"))
    renewed = got.value.headers["x-console-stamp"]
    expect(page.locator("#workspace")).to_have_attribute("data-stamp", renewed)

    with page.expect_response(lambda r: is_poll(r) and r.status == 200, timeout=15_000):
        f.work("w4")
    reveal = page.locator("#workspace [data-calm-reveal]")
    expect(reveal).to_have_text("1 new, show")
    expect(first).to_have_text("w3")  # the list did not move

    reveal.click()
    expect(first).to_have_text("w4")
    expect(page.locator("#workspace [data-calm-reveal]")).to_have_count(0)
    assert console_errors == []


def test_r_shows_the_new_rows_a_calm_list_holds_back(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    first = _holding_back_w3(page, live_server)

    # The keyboard's refresh is an explicit ask for the list as it is now.
    page.locator("body").click(position={"x": 1, "y": 1})
    page.keyboard.press("r")
    expect(first).to_have_text("w3")
    expect(page.locator("#workspace [data-calm-reveal]")).to_have_count(0)
    assert console_errors == []


def test_show_asked_while_a_poll_is_in_flight_is_not_lost(
    live_server, browser_page, console_errors
):
    """htmx drops a request an element makes while its poll is in flight: "show"
    clicked then waits for that poll to end and asks after it, with the stamp of what
    is on screen, so the poll's 204 neither swallows it nor leaves the button dead."""
    from playwright.sync_api import expect

    page = browser_page
    first = _holding_back_w3(page, live_server)
    reveal = page.locator("#workspace [data-calm-reveal]")

    held = []  # the next poll, held in flight until "show" has been clicked
    page.route(lambda url: "stamp=" in url, lambda route: held.append(route))
    for _ in range(50):
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "no poll was sent within 5 s"
    reveal.click()
    held[0].continue_()
    page.unroute_all()
    expect(first).to_have_text("w3")
    expect(page.locator("#workspace [data-calm-reveal]")).to_have_count(0)
    assert console_errors == []
