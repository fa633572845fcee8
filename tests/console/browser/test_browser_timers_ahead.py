"""Timers to come in Chromium: an operator opens the Timers page, follows "To come",
reads the strip and the list (overdue marked in words, not colour alone), sees a
Timer armed elsewhere arrive by the page's own refresh, narrows to
a Scope's tree and a Work kind through the form, switches to the next day, opens a
column's row of the strip's table and goes on to the later page, then opens a Timer's
Work; on a 360 px phone and to axe in both themes at each step, with no console error.
The same page without JavaScript answers the same form and tabs."""

import re

import pytest

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe
from tests.console.browser.support import TIMEOUT, sign_in
from tests.console.support.paging import timer_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

ROWS = "#ahead-list tbody tr"


def seed() -> None:
    f.scope("acme")
    f.scope("acme/eu-west-1.billing.invoice-run", parent="acme")
    f.scope("globex")
    f.work("w-acme", scope_id="acme", kind="billing.charge")
    f.work("w-eu", scope_id="acme/eu-west-1.billing.invoice-run", kind="billing.charge")
    f.work("w-mail", scope_id="acme", kind="mail.send")
    f.work("w-globex", scope_id="globex", kind="billing.charge")

    def arm(tx) -> None:
        timer_in(tx, "late-acme", "w-acme", -120)  # overdue
        timer_in(tx, "due-eu", "w-eu", -5)  # due, within the grace
        timer_in(tx, "mail-soon", "w-mail", 90)
        timer_in(tx, "globex-soon", "w-globex", 60)
        for n in range(60):  # more than a page over the day, in the EU Scope
            timer_in(tx, f"eu-{n:02d}", "w-eu", 600 + 1200 * n)

    f.transact(arm)


def test_an_operator_reads_what_fires_ahead_and_narrows_it(
    live_server, browser_page, console_errors
) -> None:
    from playwright.sync_api import expect

    page = browser_page
    seed()
    sign_in(page, live_server, "/timers")
    page.get_by_role("link", name="To come").click()
    page.wait_for_url(lambda url: url.endswith("/timers/ahead"))
    expect(page.locator("#chart-ahead svg rect.seg-overdue")).to_have_count(1)
    expect(page.locator("#chart-ahead .legend")).to_contain_text("Overdue by more than 30 s 1")
    expect(page.locator("#live .count")).to_contain_text("1 overdue by more than 30 s")
    late = page.locator("#timer-late-acme")
    expect(late).to_have_class(re.compile(r"\boverdue\b"))
    expect(late).to_contain_text("overdue > 30 s")
    expect(page.locator("#timer-due-eu")).to_contain_text("due")
    assert fits_and_passes_axe(page) == []

    # The page refreshes itself: a Timer armed elsewhere arrives by a poll, in the
    # list, the count and the strip's legend.
    expect(page.locator("#live .count")).to_contain_text("7 timers")
    page.select_option("#poll-every", "2")
    page.wait_for_selector("#live[hx-trigger*='every 2s']")
    with page.expect_response(lambda r: "stamp=" in r.url and r.status == 200, timeout=15_000):
        f.transact(lambda tx: timer_in(tx, "mail-now", "w-mail", 30))
    expect(page.locator("#timer-mail-now")).to_have_count(1)
    expect(page.locator("#live .count")).to_contain_text("8 timers")
    assert fits_and_passes_axe(page) == []

    # A Scope's tree and a kind, through the form (a GET: the filter is the URL).
    page.fill("#a-scope", "acme")
    page.fill("#a-kind", "billing.charge")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(lambda url: "kind=billing.charge" in url)
    ids = page.locator(ROWS).evaluate_all("rows => rows.map(r => r.id)")
    assert ids[:2] == ["timer-late-acme", "timer-due-eu"]
    assert "timer-globex-soon" not in ids
    assert "timer-mail-soon" not in ids

    # The next day keeps the filters; 62 Timers, the first 50 on this page.
    page.get_by_role("link", name="Next day").click()
    page.wait_for_url(lambda url: "window=24h" in url and "scope=acme" in url)
    expect(page.locator("#live .count")).to_contain_text("62 timers")
    expect(page.locator(ROWS)).to_have_count(50)
    assert fits_and_passes_axe(page) == []

    # The strip as a table: the +3h column's row opens the list at its first Timer.
    page.locator("#chart-ahead-table summary").click()
    row = page.locator("#chart-ahead-table tbody tr", has_text="in 2 to 3h")
    expect(row).to_have_count(1)
    row.locator("a").click()
    page.wait_for_url(lambda url: "after=" in url)
    first = page.locator(ROWS).first.get_attribute("id")
    assert first in ("timer-eu-06", "timer-eu-07"), first  # the View's second matters
    expect(page.locator("#live a[rel=prev]")).to_have_count(1)
    assert fits_and_passes_axe(page) == []

    # A Timer's Work, from its row.
    page.locator(ROWS).first.locator("a").first.click()
    page.wait_for_url(lambda url: "/works/w-eu" in url, timeout=TIMEOUT)
    assert console_errors == []


def test_the_page_and_its_form_work_without_javascript(browser, live_server, alice) -> None:
    from playwright.sync_api import expect

    seed()
    context = browser.new_context(viewport={"width": 360, "height": 800}, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server, "/timers/ahead?window=24h")
    page.fill("#a-kind", "mail.send")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(lambda url: "kind=mail.send" in url)
    expect(page.locator(ROWS)).to_have_count(1)
    expect(page.locator("#timer-mail-soon")).to_be_visible()
    # The window's tab is a plain link too. (No axe here: it runs as a script.)
    page.get_by_role("link", name="Next hour").click()
    page.wait_for_url(lambda url: "window=" not in url and "kind=mail.send" in url)
    expect(page.locator("#timer-mail-soon")).to_be_visible()
    context.close()
