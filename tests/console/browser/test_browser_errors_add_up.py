"""The Errors page adds up, in Chromium (issue 34): with Work whose Wait timed out,
Work that failed, and Work in no group, an operator reads the dashboard's Retry
exhausted tile, opens "by error", and the rows' Exhausted figures sum to the tile;
after a poll that brings one more timed-out Work they still do. At 360 px the page
has no sideways scroll and axe finds nothing serious in either theme."""

import re

import pytest

from storage import ExecutionState, WorkState
from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def seed() -> None:
    for n in range(4):
        f.timed_out(f"ticket-{n}", kind="support.ticket")
    f.exhausted("charge-1", message="card 4242 declined")
    f.exhausted("charge-2", message="card 17 declined")
    f.failed("dead-1", message="card 5 declined")
    x = f.start(f.work("handed-1", kind="ingest.batch").id)
    f.finish(x.id, state=ExecutionState.HANDOFF, work_state=WorkState.READY)


def number(text: str) -> int:
    return int(text.strip().replace(",", ""))


def exhausted_column(page) -> list[int]:
    """Each body row's Exhausted figure (the fourth cell)."""
    cells = page.locator("table.error-groups tbody tr td:nth-child(4)").all_inner_texts()
    return [number(c) for c in cells]


def test_the_errors_page_sums_to_the_exhausted_tile(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    seed()
    sign_in(page, live_server, "/dashboard")
    tile = number(page.locator("[data-figure=exhausted] .n").inner_text())
    assert tile == 4 + 2 + 1

    page.locator("#exhausted-h a", has_text="by error").click()
    expect(page.locator("h1")).to_have_text("Errors")
    rows = page.locator("table.error-groups tbody tr")
    expect(rows.first).to_have_attribute(
        "data-group", "timed out waiting for zendesk.ticket.replied"
    )
    expect(page.locator("tr[data-group='(no group)']")).to_contain_text("(no group)")
    assert sum(exhausted_column(page)) == tile
    foot = page.locator("table.error-groups tfoot td:nth-child(4)")
    assert number(foot.inner_text()) == tile

    # Another ticket times out; the page's own poll brings it, and it still adds up.
    page.select_option("#poll-every", "2")
    f.timed_out("ticket-9", kind="support.ticket")
    expect(rows.first.locator("td").nth(3)).to_have_text("5", timeout=15_000)
    assert sum(exhausted_column(page)) == tile + 1 == number(foot.inner_text())
    page.goto(f"{live_server.url}/dashboard")
    assert number(page.locator("[data-figure=exhausted] .n").inner_text()) == tile + 1

    page.goto(f"{live_server.url}/errors")
    assert fits_and_passes_axe(page) == []
    assert console_errors == []
    assert re.search(r"\b9\b", page.locator(".count").inner_text())  # 8 exhausted + 1 failed
