"""An operator keeps a Work's page and the exhausted list open on a phone while the
runtime commits elsewhere (issue 35): each poll answers 204 with a stamp that carries
the region's mark (``console/polling.py``), the mark stays put while nothing the region
shows changes, and a change no Work revision shows (a retry Timer armed, another Work
becoming exhausted) appears without reloading."""

import pytest

from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

PHONE = {"width": 360, "height": 800}


def is_poll(response) -> bool:
    return "stamp=" in response.url


def marked_204(page, commit) -> str:
    """``commit`` elsewhere, then the region's next poll: a 204 whose stamp has a mark
    (``<store>-<digest>-<mark>``), which the region now holds."""
    from playwright.sync_api import expect

    with page.expect_response(lambda r: is_poll(r) and r.status == 204, timeout=15_000) as got:
        commit()
    stamp = got.value.headers["x-console-stamp"]
    assert stamp.count("-") == 2, stamp
    expect(page.locator("[data-stamp]").first).to_have_attribute("data-stamp", stamp)
    return stamp


def test_open_regions_stay_quiet_while_the_runtime_commits_and_show_what_changes(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(PHONE)
    f.exhausted("w0")  # the exhausted list's row (w1's retry Timer takes w1 off it)
    f.exhausted("w1")
    sign_in(page, live_server, "/works/w1")
    page.select_option("#poll-every", "2")
    page.wait_for_selector("#work[hx-trigger*='every 2s']")

    # The runtime commits elsewhere: the first poll after them reads and hashes the
    # page once and brings the mark back; the next ones answer from the mark alone.
    first = marked_204(page, lambda: f.work("elsewhere-1"))
    second = marked_204(page, lambda: f.event("elsewhere-e1"))
    assert second.split("-")[1:] == first.split("-")[1:]  # same digest, same mark
    assert second != first  # the store moved on

    # A retry Timer armed for it: no Work revision, but the mark moves and the page
    # shows the Timer without a reload.
    with page.expect_response(lambda r: is_poll(r) and r.status == 200, timeout=15_000):
        f.timer("w1-retry", work_id="w1", fire_in=600, purpose="retry")
    expect(page.locator("#timer-w1-retry")).to_be_visible()
    marked_204(page, lambda: f.work("elsewhere-2"))

    # The exhausted list, on the same phone: quiet, then a newly exhausted Work waits
    # above the still list ("1 new, show"), and the button brings it in.
    page.goto(f"{live_server.url}/?is=exhausted")
    page.wait_for_selector("#workspace[hx-trigger*='every 2s']")
    expect(page.locator("#workspace tbody tr td.id a")).to_have_text(["w0"])
    page.mouse.move(0, 0)
    marked_204(page, lambda: f.work("elsewhere-3"))
    marked_204(page, lambda: f.event("elsewhere-e2"))
    with page.expect_response(lambda r: is_poll(r) and r.status == 200, timeout=15_000):
        f.exhausted("w2")
    reveal = page.locator("#workspace [data-calm-reveal]")
    expect(reveal).to_have_text("1 new, show")
    reveal.click()
    expect(page.locator("#workspace tbody tr td.id a").first).to_have_text("w2")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert console_errors == []
