"""Why is this Work waiting, in Chromium: an operator opens a waiting Work among a
realistic history, reads what would wake its Wait, the timeout's countdown and the near
misses; after two polls a new near miss (another key) arrives by a live poll, then
the right Event wakes the Wait elsewhere and the next poll drops the explanation. On
a phone (390x844) the page has no sideways scroll, and at 360 px it is axe-clean in
both themes."""

from dataclasses import replace

import pytest

from storage import WaitState
from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

KEY = ("shop", "order-7")
MISSES = "#work .near-misses li"


def granted(event_id: str, key: tuple[str, str], route: str = "") -> None:
    f.event(event_id, type="approval.granted", keys=[key])
    if route:
        f.transact(lambda tx: tx.mark_routed(event_id, route, "routed"))


def seed() -> None:
    f.works_at_once(*[f"order-{n}" for n in range(100, 160)], kind="shop.order")
    for n in range(100, 130):  # other orders' approvals, each routed to its own Work
        granted(f"ok-{n}", ("shop", f"order-{n}"), route=f"order-{n}")
    f.parked("order-7", keys=[KEY], wait_keys=[KEY], after_latest=True, timeout_in=900)


def poll_twice(page) -> None:
    page.select_option("#poll-every", "2")
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass


@pytest.mark.parametrize("size", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}])
def test_a_waiting_work_explains_itself_live(live_server, browser_page, console_errors, size):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(size)
    seed()
    sign_in(page, live_server, "/works/order-7")
    why = page.locator("#work .why-waiting")
    expect(why).to_contain_text("wakes on the first Event of approval.granted, carrying key")
    expect(why.locator("time.countdown")).to_contain_text("in 1")
    expect(page.locator(MISSES)).to_have_count(20)  # the newest 20 of that type
    expect(page.locator(MISSES).first).to_contain_text("arrived before the Wait")
    poll_twice(page)

    # Another order's approval: a near miss by key, brought by a poll.
    with page.expect_response(lambda r: "stamp=" in r.url and r.status == 200, timeout=15_000):
        granted("late-other", ("shop", "order-8"))
    expect(page.locator(MISSES).first).to_contain_text("another key: shop/order-8")
    expect(page.locator(MISSES).first).to_contain_text("not routed yet")
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    # Its link opens the Event.
    page.locator(MISSES).first.locator("a").click()
    page.wait_for_url(f"{live_server.url}/events/late-other")
    page.go_back()
    expect(why).to_be_visible()

    # The right approval wakes the Wait in another process: the explanation goes.
    def wake(tx) -> None:
        tx.mark_routed("right", "order-7", "routed")
        tx.put_wait(replace(tx.wait("order-7-wait"), state=WaitState.WOKEN, woken_by="right"))

    granted("right", KEY)
    with page.expect_response(lambda r: "stamp=" in r.url and r.status == 200, timeout=15_000):
        f.transact(wake)
    expect(why).to_have_count(0)
    expect(page.locator("#wait-order-7-wait")).to_contain_text("woken by")
    assert sideways(page) == 0
    assert console_errors == []
