"""One-step Retry and Cancel from a list row in a real browser: the compact
confirmation opens under the row (the live polls pause while it is open), a preset
reason is one click, acting returns to the same list with the result flashed."""

import re

import pytest

from storage import WorkState
from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def test_retry_from_a_row_confirms_in_place_and_returns_to_the_list(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    for i in range(3):
        f.exhausted(f"stuck-{i}")
    sign_in(page, live_server, "/?state=ready")
    page.select_option("#poll-every", "2")
    page.wait_for_selector("#workspace[hx-trigger='every 2s, consolewake']")
    row = page.locator("#workspace tr", has=page.locator("a", has_text="stuck-1"))
    expect(row.locator(".last-try")).to_contain_text("attempt 1")
    expect(row.locator(".last-try")).to_contain_text("boom")
    expect(row.locator(".badge-exhausted")).to_have_text("exhausted")

    row.get_by_role("link", name="Retry stuck-1").click()
    confirm = page.locator("tr.inline-confirm")
    expect(confirm).to_contain_text("Retry stuck-1?")
    expect(page.locator("#live-status")).to_have_text("paused (confirming an action)")
    page.wait_for_timeout(4_500)  # two poll intervals: the confirmation stays
    expect(confirm).to_have_count(1)

    confirm.get_by_label("Fix deployed").check()
    confirm.get_by_role("button", name="Retry Work").click()
    expect(page).to_have_url(f"{live_server.url}/?state=ready")
    expect(page.locator("#messages")).to_contain_text("Retried Work stuck-1: attempt 2 is pending.")
    work = f.transact(lambda tx: tx.work("stuck-1"))
    assert work.state is WorkState.READY
    assert f.transact(lambda tx: len(tx.executions("stuck-1"))) == 2

    # Cancel opens in place too; "Keep it" closes it and the polls resume.
    row = page.locator("#workspace tr", has=page.locator("a", has_text="stuck-2"))
    row.get_by_role("link", name="Cancel stuck-2").click()
    expect(page.locator("tr.inline-confirm")).to_contain_text("Cancel stuck-2?")
    page.locator("tr.inline-confirm").get_by_role("button", name="Keep it").click()
    expect(page.locator("tr.inline-confirm")).to_have_count(0)
    expect(page.locator("#live-status")).to_have_text(re.compile(r"^live · checked"))

    # A missing reason is refused in place (400), the confirmation still there.
    row.get_by_role("link", name="Cancel stuck-2").click()
    page.locator("tr.inline-confirm").get_by_role("button", name="Cancel Work").click()
    expect(page.locator("tr.inline-confirm .field-error")).to_contain_text("Give a reason")
    assert f.transact(lambda tx: tx.work("stuck-2")).state is WorkState.READY
    assert [e for e in console_errors if "400" not in e] == []
