"""The routed-run read pages in a real browser (Chromium): an operator finds a running
workflow from the Workflows list by searching its attempt's ID prefix (what an alert
gives), opens its page and reads its state, envelope and attempt. The strict CSP
must hold on both pages (console_errors collects violations)."""

import pytest

from tests.console import routedfactories as rf
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def test_an_operator_finds_a_running_workflow_by_search_and_opens_it(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    target, attempt = rf.running()
    rf.artifact(attempt.record, "report.json", b'{"ok": true}')
    rf.failed()
    rf.running()
    wf = target.receipt.workflow_id
    page = browser_page
    sign_in(page, live_server, "/routed/workflows")
    expect(page.locator("#workflows tbody tr[id^=row-]")).to_have_count(3)
    page.fill("#wf-q", attempt.record.attempt_id[:10])
    page.click("form[role=search] button[type=submit]")
    rows = page.locator("#workflows tbody tr[id^=row-]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("running")
    rows.first.locator(f'a:has-text("{wf}")').click()
    page.wait_for_url(f"**/routed/workflows/{wf}")
    expect(page.locator("h1")).to_contain_text(wf)
    expect(page.locator(".envelope-legend")).to_contain_text("accruing")
    expect(page.locator(f"#attempt-{attempt.record.attempt_id}")).to_contain_text("Attempt 1")
    expect(page.locator(".artifact-preview").first).to_contain_text("SHA-256 matches")
    expect(page.locator(".node-graph .node")).to_have_count(1)
    assert console_errors == []
