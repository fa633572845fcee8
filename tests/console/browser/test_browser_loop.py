"""The operator's whole triage loop in Chromium at real sizes, on a desktop and on a
phone-sized viewport (390x844): the dashboard, its exhausted tile, the failure read
on a row, rows selected across two real polls (selection and buttons still there),
"Retry all matching" over more than 1,000 Work with its progress and summary, and
the retried Work gone from the list."""

import re

import pytest

from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

STUCK = 1_200  # over the old 1,000 cap and over Django's 1,000 form fields
VIEWPORTS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_triage_loop_from_dashboard_to_bulk_retry(
    live_server, browser_page, console_errors, viewport
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size(VIEWPORTS[viewport])
    stuck = [f"stuck-{i:04d}" for i in range(STUCK)]
    f.exhausted_many(stuck)
    f.running("busy")  # live: not exhausted, not retried
    polls: list[str] = []
    page.on("request", lambda r: "stamp=" in r.url and polls.append(r.url))

    # The dashboard's exhausted tile counts them and opens the list of them.
    sign_in(page, live_server, "/dashboard")
    tile = page.locator("[data-figure=exhausted]")
    expect(tile.locator(".n")).to_have_text("1200")
    tile.click()
    if "/dashboard" in page.url:
        # The tile opens the dashboard's own exhausted section; its list is the Work
        # list of ready Work (here: all exhausted).
        expect(page.locator("#exhausted")).to_contain_text("Retry exhausted")
        page.goto(f"{live_server.url}/?state=ready")
    list_url = page.url

    # The failure where the decision is made, on a row.
    first = page.locator("#workspace tbody tr td.id a").first.inner_text()
    assert first in stuck
    row = page.locator("#workspace tbody tr", has=page.locator("a", has_text=first))
    expect(row.locator(".last-try")).to_contain_text("attempt 1")
    expect(row.locator(".last-try")).to_contain_text("upstream returned 502 Bad Gateway")
    expect(row.locator(".last-try")).to_contain_text("exhausted: retries used up")
    expect(row.locator(".badge-exhausted")).to_be_visible()

    # Two real polls swap the list in; then rows are selected and the polls pause.
    page.select_option("#poll-every", "2")
    page.wait_for_selector("#workspace[hx-trigger='every 2s, consolewake']")
    # Each poll answers with a new stamp (another process rewrites the last row's Work:
    # a change elsewhere would answer 204; the first row stays where it is) and swaps
    # the list in; the rows and their controls come back each time. The rewritten Work
    # leaves the page (oldest updated first), so the next one to rewrite is read only
    # once the swap has happened: a Work read from the list before it would be one the
    # page no longer shows, whose rewrite rightly answers 204. The pointer leaves the
    # rows first, since rows under it are never moved by a poll.
    page.mouse.move(0, 0)
    rows = page.locator("#workspace tbody tr td.id a")
    for _ in range(2):
        last = rows.last.inner_text()
        is_swap = lambda r: "stamp=" in r.url and r.status == 200  # noqa: E731
        with page.expect_response(is_swap, timeout=15_000):
            f.transact(lambda tx, last=last: tx.put_work(tx.work(last)))
        expect(rows.last).not_to_have_text(last)
        expect(rows.filter(has_text=last)).to_have_count(0)
        expect(row.locator(".last-try")).to_contain_text("upstream returned 502")
    boxes = page.locator("#workspace input[name=work]")
    boxes.nth(0).check()
    boxes.nth(1).check()
    expect(page.locator("#live-status")).to_have_text("paused (rows selected)")
    paused_at = len(polls)
    page.wait_for_timeout(4_500)  # two poll intervals
    assert len(polls) == paused_at
    expect(page.locator("#workspace input[name=work]:checked")).to_have_count(2)
    for value in ("retry-selected", "cancel-selected", "retry-all", "cancel-all"):
        expect(page.locator(f"#workspace button[value={value}]")).to_be_attached()
    boxes.nth(0).uncheck()
    boxes.nth(1).uncheck()

    # Retry all matching: over 1,000, confirmed with the filter restated and each
    # eligible row's failure; progress while it runs, then the summary.
    page.locator("#workspace button[value=retry-all]").click()
    expect(page.locator("h1")).to_have_text("Retry 1,200 Work")
    expect(page.locator("#eligible")).to_contain_text("upstream returned 502 Bad Gateway")
    page.get_by_label("Cause fixed upstream").check()
    page.locator("form[data-bulk-run] button[type=submit]").click()
    expect(page.locator("#bulk-progress")).to_be_visible()
    expect(page.locator("h1")).to_have_text(
        re.compile(r"^Retry: 1,200 done, 0 skipped, 0 left$"), timeout=120_000
    )

    # Back on the list: the retried Work is no longer exhausted.
    page.goto(list_url)
    row = page.locator("#workspace tbody tr", has=page.locator("a", has_text=first))
    if "exhausted" in list_url:
        expect(row).to_have_count(0)
    else:
        expect(row.locator(".last-try")).to_contain_text("attempt 2")
        expect(row.locator(".badge-exhausted")).to_have_count(0)
    page.goto(f"{live_server.url}/dashboard")
    expect(page.locator("[data-figure=exhausted] .n")).to_have_text("0")
    assert console_errors == []
