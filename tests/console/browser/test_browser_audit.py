"""The audit by person in Chromium: an operator opens their own page from the user
menu, sees their own action (done elsewhere) land there by a live poll after two polls
with nothing new, follows its Work, reads
the reasons in the Event stream filtered by actor, opens the preset "My actions in
the last 24 h", and pages back through a history longer than a page on a phone.
axe-clean in both themes, no sideways scroll at 360 px."""

import re

import pytest

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

PHONE = {"width": 390, "height": 844}
ROWS = "#actions tbody tr"


def manual(event_id: str, who: str, work_id: str, reason: str, action: str = "cancel"):
    f.event(
        event_id,
        source="core.manual",
        type=f"core.manual.{action}",
        work_id=work_id,
        actor=f"operator:{who}",
        schema="core.manual.v1",
        data={"action": action, "reason": reason},
        route="routed",
    )


def seed() -> None:
    f.works_at_once(*[f"order-{n:02d}" for n in range(60)], kind="billing.charge")
    for n in range(55):  # more than a page (50)
        manual(f"act-{n:02d}", "alice", f"order-{n:02d}", f"duplicate charge #{n}")
        f.event(f"hook-{n:02d}", work_id=f"order-{n:02d}")
    manual("bob-1", "bob", "order-59", "customer asked", action="retry")


def test_my_actions_from_the_menu_live_then_the_stream_and_the_preset(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    seed()
    sign_in(page, live_server, "/")
    page.locator(".user-menu summary").click()
    page.locator(".user-menu a", has_text="My actions").click()
    page.wait_for_url(f"{live_server.url}/operators/alice")
    expect(page.locator(ROWS)).to_have_count(50)
    expect(page.locator(ROWS).first).to_contain_text("duplicate charge #54")
    expect(page.locator("#actions")).not_to_contain_text("customer asked")

    # Two polls with nothing new (204s), then one that brings a new action.
    page.select_option("#poll-every", "2")
    expect(page.locator("#actions")).to_have_attribute("hx-trigger", "every 2s, consolewake")
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass
    with page.expect_response(lambda r: "stamp=" in r.url and r.status == 200, timeout=15_000):
        manual("act-new", "alice", "order-57", "charged twice by the retry storm")
    page.mouse.move(0, 0)
    page.locator("#actions [data-calm-reveal]").click(timeout=15_000)
    expect(page.locator(ROWS).first).to_contain_text("charged twice by the retry storm")
    assert fits_and_passes_axe(page) == []

    # Its Work, and back.
    page.locator(ROWS).first.locator("a[href='/works/order-57']").click()
    page.wait_for_url(f"{live_server.url}/works/order-57")
    page.go_back()

    # The stream by actor: the reasons in the rows, the operator linked.
    page.locator("a", has_text="In the Event stream").click()
    page.wait_for_url(re.compile(r"/events\?actor=operator%3Aalice$"))
    expect(page.locator("#events tbody tr")).to_have_count(50)
    expect(page.locator("#events")).to_contain_text("charged twice by the retry storm")
    expect(page.locator("#events a[href='/operators/alice']").first).to_be_visible()
    assert fits_and_passes_axe(page) == []

    # The preset, from the Work list's Views menu.
    page.goto(f"{live_server.url}/views")
    page.locator("a", has_text="My actions in the last 24 h").click()
    page.wait_for_url(re.compile(r"/events\?mine=1&since=24h$"))
    expect(page.locator("#events tbody tr")).to_have_count(50)
    expect(page.locator("#events")).not_to_contain_text("customer asked")
    expect(page.locator(".chips")).to_contain_text("my actions")
    assert fits_and_passes_axe(page) == []
    assert console_errors == []


def test_an_operators_history_pages_back_on_a_phone(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(PHONE)
    seed()
    sign_in(page, live_server, "/operators/alice")
    page.select_option("#poll-every", "2")
    for _ in range(2):
        with page.expect_response(lambda r: "stamp=" in r.url, timeout=15_000):
            pass
    expect(page.locator(ROWS)).to_have_count(50)
    assert sideways(page) == 0

    page.locator("#actions a[rel=next]").click()
    page.wait_for_url(lambda url: "before=" in url)
    expect(page.locator(ROWS)).to_have_count(5)
    expect(page.locator(ROWS).last).to_contain_text("duplicate charge #0")
    expect(page.locator("#actions")).not_to_have_attribute("hx-trigger", "every 2s, consolewake")
    assert sideways(page) == 0

    page.locator("#actions a[rel=prev]").click()
    page.wait_for_url(lambda url: "after=" in url)
    expect(page.locator(ROWS)).to_have_count(50)
    expect(page.locator(ROWS).first).to_contain_text("duplicate charge #54")
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []
    assert console_errors == []
