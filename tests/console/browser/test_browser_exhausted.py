"""Exhausted Work and error groups in a real browser (Debian's Chromium through
Playwright), at the real bulk cap (10,000 eligible, not shrunk): the dashboard's tile
opens the exhausted list, "Retry all exhausted" retries more than a thousand in one
run (past the 1,000 form fields Django accepts), Work in backoff is left alone, and the
retried Work leaves the list; on the Errors page one group is retried and leaves, the
other stays. "The rest" beyond the cap: test_bulk_at_scale."""

import re

import pytest

from console.actions.work import BULK_CAP
from storage.default import default_store
from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

EXHAUSTED = 1_100
BATCH = 275  # a few transactions, as in test_bulk's 1,100-Work test
SLOW = 180_000  # ms: 1,100 retries, each its own Event, on a shared machine


def read(fn):
    import storage

    return storage.view(default_store(), None, fn)


def test_the_dashboard_tile_leads_to_retrying_every_exhausted_work(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    assert EXHAUSTED < BULK_CAP == 10_000  # one run; beyond the cap: test_bulk_at_scale
    ids = [f"stuck-{i:04d}" for i in range(EXHAUSTED)]
    for start in range(0, EXHAUSTED, BATCH):
        f.exhausted_at_once(*ids[start : start + BATCH], message=f"card {start} declined")
    f.backoff("in-backoff", message="card 1 declined")
    f.work("queued")

    page = browser_page
    sign_in(page, live_server, "/dashboard")
    tile = page.locator("a[data-figure=exhausted]")
    expect(tile.locator(".n")).to_have_text("1100")
    tile.click()
    expect(page).to_have_url(f"{live_server.url}/?is=exhausted&sort=updated")
    expect(page.locator(".count")).to_contain_text("1100 Work match the filter")
    expect(page.locator("#workspace td.id a", has_text="in-backoff")).to_have_count(0)

    page.click("button[value=retry-all]")
    expect(page.locator("h1")).to_have_text("Retry 1,100 Work")
    expect(page.locator(".restated")).to_contain_text("Every Work with retries exhausted")
    expect(page.locator(".confirm")).to_contain_text("its Timer keeps running")
    page.fill("[name=reason]", "card processor back")
    page.locator(".action-form button[type=submit]").click()
    expect(page.locator("h1")).to_have_text("Retry: 1,100 done, 0 skipped, 0 left", timeout=SLOW)

    page.click("text=← Back to the list")
    expect(page).to_have_url(re.compile(r"/\?is=exhausted"))
    expect(page.locator("#workspace")).to_contain_text("No Work matches this filter")
    attempts = read(lambda tx: {x.work_id for x in tx.executions() if x.attempt == 2})
    assert attempts == set(ids)
    # The Work in backoff kept its Timer and its one attempt.
    assert read(lambda tx: [t.id for t in tx.timers("in-backoff")]) == ["in-backoff-retry"]
    assert read(lambda tx: len(tx.executions("in-backoff"))) == 1
    assert console_errors == []


def test_one_error_group_is_retried_from_the_errors_page(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    for i in range(3):
        f.exhausted(f"card-{i}", message=f"card {4000 + i} declined (req 3f9a0c1e{i:02d})")
    f.exhausted("db-1", message="db down at 10.0.0.7")
    f.exhausted("db-2", message="db down at 10.0.0.9")
    f.failed("db-3", message="db down at 10.0.0.1")

    page = browser_page
    sign_in(page, live_server, "/errors")
    card = page.locator("tr[data-group='card <n> declined (req <hex>)']")
    db = page.locator("tr[data-group='db down at <n>']")
    expect(card.locator("td.n").first).to_have_text("3")
    expect(db.locator("td.n").first).to_have_text("3")

    card.locator("a", has_text="Retry 3…").click()
    expect(page.locator("h1")).to_have_text("Retry 3 Work")
    expect(page.locator("#eligible")).to_contain_text("card-0")
    expect(page.locator("#eligible")).not_to_contain_text("db-1")
    page.fill("[name=reason]", "declines were a processor outage")
    page.locator(".action-form button[type=submit]").click()
    expect(page.locator("h1")).to_have_text("Retry: 3 done, 0 skipped, 0 left")

    page.goto(f"{live_server.url}/errors")
    expect(page.locator("tr[data-group]")).to_have_count(1)
    expect(db).to_be_visible()
    # The Work list's error facet now offers only the group left.
    page.goto(f"{live_server.url}/")
    expect(page.locator("#facet-error")).to_contain_text("db down at <n>")
    expect(page.locator("#facet-error")).not_to_contain_text("card")
    assert console_errors == []
