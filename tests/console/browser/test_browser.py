"""The console in a real browser: Debian's Chromium driven by Playwright. The browser,
the page and its error log are the fixtures of tests/console/browser/conftest.py.
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from storage.ops.manual import MANUAL_SOURCE
from tests.console import factories as f
from tests.console.browser.support import TIMEOUT, sign_in

REPO = Path(__file__).resolve().parents[3]
SCREENSHOT = REPO / "docs" / "screenshot.png"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def seed_fleet() -> None:
    f.scope("acme", name="Acme Corp")
    f.scope("acme-eu", parent="acme", name="Acme EU")
    f.scope("globex", name="Globex")
    kinds = ["billing.charge", "deploy.service", "sync.crm"]
    scopes = ["acme", "acme-eu", "globex"]
    for i in range(36):
        work_id = f"wrk-{i:03d}"
        kw = {"kind": kinds[i % 3], "scope_id": scopes[i % 3], "keys": [("github.acme", str(i))]}
        match i % 6:
            case 0:
                f.completed(work_id, **kw)
            case 1:
                f.exhausted(work_id, **kw)
            case 2:
                f.running(work_id, lease=600, **kw)
            case 3:
                f.parked(work_id, **kw)
            case 4:
                f.failed(work_id, **kw)
            case _:
                f.work(work_id, **kw)
        f.event(
            f"ev-{i:03d}",
            work_id=work_id,
            source="github.acme",
            type="push.received",
            data={"ref": "main", "commit": f"{i:07x}"},
            route="routed",
        )


def test_an_operator_signs_in_and_htmx_loads_under_the_csp(
    live_server, browser_page, console_errors
):
    page = browser_page
    page.goto(f"{live_server.url}/")

    assert "/accounts/login/" in page.url
    sign_in(page, live_server)

    assert page.inner_text("h1") == "Work"
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.evaluate("document.documentElement.classList.contains('js')")
    assert console_errors == []


def test_filter_by_a_facet_then_page_forward_and_back(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    f.works_at_once(*[f"bulk-{i:02d}" for i in range(40)], kind="sync.crm")
    f.work("other", kind="deploy.service")
    sign_in(page, live_server, "/?size=25")
    rows = page.locator("td.id a")

    page.locator("#facet-kind a", has_text="sync.crm").click()
    expect(page).to_have_url(f"{live_server.url}/?kind=sync.crm&size=25")
    expect(page.locator(".count")).to_contain_text("40 Work match the filter")
    expect(page.locator("#f-kind")).to_have_value("sync.crm")  # the form swapped out of band
    expect(rows).to_have_count(25)
    first_page = rows.all_inner_texts()
    assert "other" not in first_page

    page.click("a[rel=next]")
    expect(page).to_have_url(re.compile(r"after=\d+\.bulk-"))
    expect(rows).to_have_count(15)
    second_page = rows.all_inner_texts()
    page.click("a[rel=prev]")
    expect(page).to_have_url(re.compile(r"before=\d+\.bulk-"))
    expect(rows).to_have_count(25)

    assert rows.all_inner_texts() == first_page
    assert sorted(first_page + second_page) == [f"bulk-{i:02d}" for i in range(40)]
    assert console_errors == []


def test_open_a_work_read_its_timeline_cancel_and_retry(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    f.parked("stuck")
    f.event("hook", work_id="stuck", data={"<b>": "escaped"}, route="routed")
    f.exhausted("flaky")
    sign_in(page, live_server, "/?q=stuck")

    expect(page).to_have_url(f"{live_server.url}/works/stuck")
    payload = page.locator("details.payload").first
    payload.locator("summary").click()
    expect(payload.locator("pre")).to_be_visible()
    expect(payload.locator("pre")).to_contain_text('"<b>": "escaped"')

    page.click("text=Cancel…")
    expect(page.locator("h1")).to_contain_text("Cancel Work stuck")
    page.fill("textarea[name=reason]", "stuck since 3am")
    page.click("button:has-text('Cancel Work')")
    expect(page.locator(".message")).to_contain_text("Cancelled Work stuck.")
    expect(page.locator("h1 .badge")).to_have_text("cancelled")
    expect(page.locator(".why").first).to_contain_text("a terminal Work needs a successor")

    page.goto(f"{live_server.url}/works/flaky")
    page.click("text=Retry…")
    page.fill("textarea[name=reason]", "upstream fixed")
    page.click("button:has-text('Retry Work')")
    expect(page.locator(".message")).to_contain_text("attempt 2 is pending")
    expect(page.locator("#attempt-2")).to_contain_text("pending")
    expect(page.locator(".tl-item").last).to_contain_text(MANUAL_SOURCE)
    expect(page.locator(".tl-item").last).to_contain_text("operator:alice")
    assert console_errors == []


def test_bulk_retry_a_filtered_set(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    for i in range(3):
        f.exhausted(f"billing-{i}", kind="billing.charge")
    f.completed("billing-done", kind="billing.charge")
    f.exhausted("other-kind", kind="sync.crm")
    sign_in(page, live_server, "/?kind=billing.charge")

    page.click("button[value=retry-all]")
    expect(page.locator("h1")).to_contain_text("Retry 3 Work")
    expect(page.locator(".restated")).to_contain_text("Every Work with kind billing.charge")
    expect(page.locator(".summary-line")).to_contain_text("3 eligible, 0 excluded")
    expect(page.locator(".counts")).to_contain_text("1 of them is finished")
    page.fill("textarea[name=reason]", "payment provider back")
    page.click("button:has-text('Retry 3 Work')")

    expect(page.locator("h1")).to_contain_text("Retry: 3 done, 0 skipped")
    page.goto(f"{live_server.url}/works/other-kind")
    expect(page.locator("#attempt-2")).to_have_count(0)
    assert console_errors == []


def test_download_an_artifact(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    ref = f.publish(b"line 1\nline 2\n", "text/plain")
    x = f.running("with-log")
    f.finish(x.id, artifacts=[ref])
    sign_in(page, live_server, "/works/with-log")

    with page.expect_download() as info:
        page.click(".artifact a")
    download = info.value

    assert Path(download.path()).read_bytes() == b"line 1\nline 2\n"
    assert download.suggested_filename == "with-log-attempt-1-log.txt"  # not the hash
    expect(page.locator("h1")).to_contain_text("with-log")
    assert console_errors == []


def test_a_change_by_another_process_appears_without_reloading(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    f.work("first")
    sign_in(page, live_server)
    page.select_option("#poll-every", "2")  # console.js submits the picker
    expect(page.locator("#workspace")).to_have_attribute("hx-trigger", "every 2s, consolewake")
    page.evaluate("window.__marker = 'same page'")

    code = textwrap.dedent(
        """
        import os, sys
        sys.path.insert(0, os.getcwd())
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conduit.settings")
        import django
        django.setup()
        from storage import Guard, Work
        from storage.orm import OrmStore
        work = Work(id="from-elsewhere", kind="sync.crm")
        OrmStore().transact(Guard(), lambda tx: tx.put_work(work))
        """
    )
    process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    assert process.wait(timeout=60) == 0

    # A calm list: the new row waits above the rows shown until the operator asks.
    page.mouse.move(0, 0)  # not over the rows (that alone holds a swap back)
    reveal = page.locator("#workspace [data-calm-reveal]")
    expect(reveal).to_have_text("1 new, show", timeout=TIMEOUT)
    reveal.click()
    expect(page.locator("#workspace")).to_contain_text("from-elsewhere", timeout=TIMEOUT)
    assert page.evaluate("window.__marker") == "same page"  # no reload happened
    expect(page.locator("#live-status")).to_contain_text("live")
    assert console_errors == []


def test_screenshot_of_the_work_list(live_server, browser_page, console_errors, tmp_path):
    """The README's picture of the Work list with a realistic fleet. Written to
    docs/screenshot.png only with CONDUIT_UPDATE_SCREENSHOT=1 (`make screenshot`), so an
    ordinary test run leaves the work tree clean."""
    page = browser_page
    seed_fleet()
    sign_in(page, live_server, "/?size=25")
    page.select_option("#poll-every", "0")  # a still picture
    page.wait_for_load_state("networkidle")
    update = os.environ.get("CONDUIT_UPDATE_SCREENSHOT") == "1"
    target = SCREENSHOT if update else tmp_path / "screenshot.png"
    target.parent.mkdir(exist_ok=True)

    page.screenshot(path=str(target), full_page=True)

    assert target.stat().st_size > 10_000
    assert console_errors == []


def test_dashboard_charts_render_in_both_themes_and_link_to_their_lists(
    live_server, browser_page, console_errors, tmp_path
):
    """The SVG charts draw under the CSP, read in light and dark, and a column opens
    the Work list filtered to exactly the Work it counted."""
    seed_fleet()
    f.event("ev-acme", scope_id="acme-eu")  # an Event recorded in the tree
    page = browser_page
    sign_in(page, live_server, "/dashboard/acme")

    columns = page.locator("#chart-ended svg rect.seg")
    assert columns.count() >= 2  # completed and failed Work in the acme tree
    assert page.locator("#chart-events svg rect.seg").count() >= 1
    assert page.locator("#chart-kinds a.bar").count() == 2  # one kind per Scope in the fleet
    fills = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        fills[scheme] = page.eval_on_selector(
            "#chart-ended rect.seg-failed", "r => getComputedStyle(r).fill"
        )
        page.screenshot(path=str(tmp_path / f"dashboard-{scheme}.png"), full_page=True)
    assert fills["light"] != fills["dark"], "the failed colour follows the theme"

    failed = page.locator("#chart-ended a:has(rect.seg-failed)").first
    expected = int(failed.get_attribute("data-value"))
    failed.click()
    page.wait_for_url(re.compile(r"/\?state=failed&within=acme&since=.+&until=.+"))

    assert page.locator("table.grid tbody tr").count() == expected
    assert page.locator(".chip-name", has_text="until").count() == 1
    assert console_errors == []
