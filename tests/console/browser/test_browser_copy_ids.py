"""Shortened IDs in a real browser: a UUID takes about eight characters of a row, its
whole text stays in the page, and the copy button puts the whole ID on the clipboard
and says "Copied" in a live region (one listener in console.js, no inline script)."""

import pytest

from storage import ExecutionState, WorkState
from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

UUID = "0193a4f2-9c1e-7d3b-8f00-5e6a7b8c9d0e"
MESSAGE = (
    "PaymentGatewayTimeout: POST https://gateway.example.com/v2/charges/ch_3PqRsTuVwXyZ"
    " did not answer within 30s (attempt budget 5, idempotency key 7f3c9a2e-1b4d-4e8f)"
)


def test_the_copy_button_copies_the_whole_id_of_a_shortened_row(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    f.work(UUID)
    sign_in(page, live_server, "/")
    link = page.locator("#workspace td.id a", has_text=UUID)
    expect(link.locator("[data-sid]")).to_have_attribute("title", UUID)
    assert link.inner_text() == UUID  # the whole ID is the text: select, find, read
    box = link.bounding_box()
    assert box is not None
    assert box["width"] < 110, box  # about eight characters drawn

    button = page.get_by_role("button", name=f"Copy Work ID {UUID}")
    button.click()
    expect(page.locator("#copy-status")).to_have_text("Copied")
    expect(button).to_have_class("copy-id copied")
    assert page.evaluate("navigator.clipboard.readText()") == UUID
    assert console_errors == []


WIDE_TABLES = """() => [...document.querySelectorAll("section.panel")]
  .filter(p => p.querySelector("table"))
  .map(p => ({h: (p.querySelector("h2") || {}).textContent || "", panel: p.clientWidth,
              table: Math.ceil(p.querySelector("table").getBoundingClientRect().width)}))"""


def test_work_page_and_executions_tables_fit_their_panels_at_1440_px(
    live_server, browser_page, console_errors
):
    """UUID IDs, a long failure message, a Wait with its timeout: every table of the
    Work page and the Executions page fits its panel, the page no wider than the window."""
    page = browser_page
    f.work(UUID, scope_id="")
    x = f.start(UUID)
    f.finish(x.id, state=ExecutionState.FAILED, work_state=WorkState.READY, message=MESSAGE)
    other = UUID.replace("0193", "0194")
    f.parked(other)
    sign_in(page, live_server, f"/works/{UUID}")
    for path in (f"/works/{UUID}", f"/works/{other}", "/executions?state=any", "/waits"):
        page.goto(f"{live_server.url}{path}")
        for t in page.evaluate(WIDE_TABLES):
            assert t["table"] <= t["panel"], (path, t)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1440, path
    assert console_errors == []
