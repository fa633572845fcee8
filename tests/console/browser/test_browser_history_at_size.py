"""The store's past at a real size, in Chromium (issue 32). A store of 3,000 generated
Work (every state, attempts, Events, Waits and Timers, written through the storage API
in transactions of 100) around one Work that lived long: twelve attempts failed, the
thirteenth parked on a Wait, was woken and failed, and an operator's retry started the
fourteenth, which completed. The operator opens that Work as of the Event three
attempts before its last and reads the attempt count, state and Waits of then; opens
what changed since its first failure and pages through more than one page of
transactions to the operator's retry; and reads the dashboard's counts as of the
moment it parked, which differ from now by that Work alone. Every page fits 360 px
and is axe-clean in both themes."""

import re

import pytest
from django.core.management import call_command

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

WORK = "payout/2026-12-07/long-lived"
GENERATED = 3_000
FAILED = 12  # attempts that fail before the one that parks


def live_long() -> None:
    """The long-lived Work's life, each step its own transaction: ``FAILED`` failures,
    each followed by its Event; a park on a Wait, a wake, a failure; a retry by
    operator:alice; a completed attempt."""
    f.failed_parked_retried(
        WORK, kind="billing.payout", topic="payout", failures=FAILED, wait_id="payout-approval"
    )


def as_of(page, event_id: str):
    """The timeline's "as of" link of Event ``event_id`` (every failure's Event has
    the same type: the link is told apart by the Event's sequence)."""
    sequence = f.transact(lambda tx: tx.event(event_id).sequence)
    return page.locator(f".tl-item a[href$='?as_of=%23{sequence}']")


def state_counts(page) -> dict[str, tuple[str, str]]:
    """The dashboard-as-of table: each state's (then, now) cells."""
    out = {}
    for row in page.locator("table tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        out[row.locator("th").inner_text().strip().lower()] = (cells[0].strip(), cells[1].strip())
    return out


def test_a_long_lived_work_in_the_past_of_a_store_of_thousands(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    call_command("generate", works=GENERATED, seed=32, batch=100, realistic=True, no_progress=True)
    live_long()
    assert f.transact(lambda tx: tx.store_version()) > 2 * FAILED
    sign_in(page, live_server, f"/works/{WORK}")
    expect(page.locator("h1")).to_contain_text("completed")

    # The Event three attempts before the last (the 14th): after the 11th failed.
    facts = page.locator("dl.kv")
    as_of(page, f"declined-{FAILED - 1}").click()
    page.wait_for_url(re.compile(r"\?as_of=%23\d+$"))
    expect(page.locator(".banner-past")).to_contain_text("Now it is completed")
    expect(facts.locator("div", has_text="Attempts")).to_contain_text(str(FAILED - 1))
    expect(facts.locator("div", has_text="State")).to_contain_text("ready")
    expect(page.locator("#then-attempts-h + .table-wrap tbody tr")).to_have_count(FAILED - 1)
    expect(page.get_by_text("No Waits at that moment.")).to_be_visible()
    assert fits_and_passes_axe(page) == []

    # What changed since the first failure: more than a page of transactions, the
    # operator's retry on a later one.
    page.get_by_role("link", name="Back to now").click()
    as_of(page, "declined-1").click()
    expect(facts.locator("div", has_text="Attempts")).to_contain_text("1")
    page.get_by_role("link", name="What changed since").click()
    page.wait_for_url(re.compile(r"/changes/payout.*\?from=%23\d+$"))
    retry = page.locator("li.change", has_text="operator:alice")
    expect(retry).to_have_count(0)
    assert fits_and_passes_axe(page) == []
    pages = 1
    while retry.count() == 0:
        page.get_by_role("link", name="Next page of changes").click()
        page.wait_for_url(re.compile(r"&after=\d+$"))
        pages += 1
        assert pages < 10
    assert pages >= 2
    expect(retry).to_contain_text("core.manual")
    expect(retry).to_contain_text(f"attempt {FAILED + 2}")
    assert fits_and_passes_axe(page) == []

    # The dashboard as of the moment it parked: that Work was waiting then, is
    # completed now, and every other count is the same (the generated Work did not
    # change since).
    parked = f.transact(lambda tx: tx.event("parked").sequence)
    page.goto(f"{live_server.url}/dashboard")
    page.get_by_label("Work counts as of").fill(f"#{parked}")
    page.get_by_role("button", name="Show then").click()
    page.wait_for_url(re.compile(r"/dashboard\?as_of=%23\d+$"))
    expect(page.locator(".banner-past")).to_contain_text("Work counts as they were at")
    counts = state_counts(page)
    for state, (then, now) in counts.items():
        moved = {"waiting": 1, "completed": -1}.get(state, 0)
        assert int(then.replace(",", "")) == int(now.replace(",", "")) + moved, (state, then, now)
    assert sum(int(now.replace(",", "")) for _, now in counts.values()) == GENERATED + 1
    assert fits_and_passes_axe(page) == []
    assert console_errors == []
