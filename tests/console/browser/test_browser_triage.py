"""The operator's triage loop on the Work list in a real browser (Debian's Chromium
through Playwright): the row checkboxes and bulk buttons come back with every swap of
the list (a live poll, a facet, a sort, a page), a selection pauses the polls and says
so, and the live indicator goes offline when polls fail and recovers by itself."""

import re

import pytest

from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

POLL_WAIT = 10_000  # ms: several 2 s polls on a shared machine


def is_poll(url: str) -> bool:
    return "stamp=" in url


def fastest_polls(page) -> None:
    """The interval picker's shortest setting (2 s), as an operator would choose it."""
    page.select_option("#poll-every", "2")  # console.js submits the picker
    page.wait_for_selector("#workspace[hx-trigger='every 2s, consolewake']")


def controls_are_there(page, rows: int) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#workspace input[name=work]")).to_have_count(rows)
    expect(page.locator("#workspace [data-select-all]")).to_have_count(1)
    for value in ("retry-selected", "cancel-selected", "retry-all", "cancel-all"):
        expect(page.locator(f"#workspace button[value={value}]")).to_be_visible()


def bring_in(page, name: str) -> None:
    """A calm list holds a new row above the ones shown ("N new, show") until asked."""
    from playwright.sync_api import expect

    page.mouse.move(0, 0)  # not over the rows: that alone would hold a swap back
    page.locator("#workspace [data-calm-reveal]").click(timeout=POLL_WAIT)
    expect(page.locator("#workspace td.id a", has_text=name)).to_be_visible(timeout=POLL_WAIT)


def test_checkboxes_and_bulk_buttons_survive_polls_facets_sorting_and_paging(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    f.works_at_once(*[f"crm-{i:02d}" for i in range(30)], kind="sync.crm")
    f.works_at_once("deploy-1", "deploy-2", kind="deploy.service")
    polls: list[str] = []
    page.on("request", lambda r: is_poll(r.url) and polls.append(r.url))
    sign_in(page, live_server, "/?size=25")
    fastest_polls(page)
    controls_are_there(page, 25)

    # Two polls that each bring a new Work (another process adds it in between): the
    # calm list offers it, and showing it swaps the list in.
    for name in ("new-1", "new-2"):
        f.work(name, kind="deploy.service")
        bring_in(page, name)
        controls_are_there(page, 25)
    expect(page.locator("#live-status")).to_have_text(re.compile(r"^live · checked \d+s ago$"))

    page.check("input[name=work][value=new-2]")
    page.check("input[name=work][value=new-1]")
    expect(page.locator("[data-selected-count]")).to_have_text("2 selected (live updates paused):")
    expect(page.locator("#live-status")).to_have_text("paused (rows selected)")
    f.work("while-selected", kind="deploy.service")
    sent = len(polls)
    page.wait_for_timeout(5_000)  # two and a half poll intervals
    assert len(polls) == sent  # paused: no poll went out
    expect(page.locator("#workspace td.id a", has_text="while-selected")).to_have_count(0)
    expect(page.locator("input[name=work]:checked")).to_have_count(2)
    controls_are_there(page, 25)

    page.uncheck("input[name=work][value=new-2]")
    page.uncheck("input[name=work][value=new-1]")
    bring_in(page, "while-selected")  # the polls are back, and bring it

    # A facet click: the rows and their controls come back; a ticked row still shown
    # stays ticked.
    page.check("input[name=work][value=crm-29]")
    page.locator("#facet-kind a", has_text="sync.crm").click()
    expect(page).to_have_url(f"{live_server.url}/?kind=sync.crm&size=25")
    expect(page.locator(".count")).to_contain_text("30 Work match the filter")
    controls_are_there(page, 25)
    expect(page.locator("input[name=work][value=crm-29]")).to_be_checked()
    expect(page.locator("[data-selected-count]")).to_have_text("1 selected (live updates paused):")
    page.uncheck("input[name=work][value=crm-29]")

    # A sort change (Updated: Created is not among the default columns, issue 34).
    page.locator("th a", has_text="Updated").click()
    expect(page).to_have_url(re.compile(r"sort=-?updated"))
    controls_are_there(page, 25)
    page.check("#workspace input[name=work] >> nth=0")
    expect(page.locator("[data-selected-count]")).to_have_text("1 selected (live updates paused):")
    page.uncheck("#workspace input[name=work] >> nth=0")

    # A page change.
    page.click("a[rel=next]")
    expect(page).to_have_url(re.compile(r"after=\d+\.crm-"))
    controls_are_there(page, 5)
    page.check("[data-select-all]")
    expect(page.locator("[data-selected-count]")).to_have_text("5 selected (live updates paused):")
    expect(page.locator("#live-status")).to_have_text("paused (rows selected)")

    page.click("button[value=retry-selected]")  # a POST: no ID in the URL
    expect(page).to_have_url(f"{live_server.url}/actions/bulk/review")
    expect(page.locator("h1")).to_have_text("Retry 5 Work")
    assert console_errors == []


def test_the_live_indicator_goes_offline_when_polls_fail_and_recovers(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    f.work("steady")
    sign_in(page, live_server)
    fastest_polls(page)
    status = page.locator("#live-status")
    expect(status).to_have_text(re.compile(r"^live · checked \d+s ago$"))

    page.route(is_poll, lambda route: route.abort())
    expect(status).to_have_text(
        re.compile(r"^offline since \d\d:\d\d, retrying$"), timeout=POLL_WAIT
    )
    expect(status).to_have_class(re.compile(r"\berror\b"))

    page.unroute(is_poll)
    f.work("after-the-blip")  # the next poll answers again, and its row can come in
    bring_in(page, "after-the-blip")
    expect(status).to_have_text(re.compile(r"^live · checked \d+s ago$"))
    expect(status).not_to_have_class(re.compile(r"\berror\b"))
    # A poll answered "unchanged" (204) keeps it live too.
    page.wait_for_timeout(2_500)
    expect(status).to_have_text(re.compile(r"^live · checked [0-3]s ago$"))

    # The tab hidden (what the browser reports when the operator switches tabs).
    page.evaluate(
        "Object.defineProperty(document, 'hidden', {value: true, configurable: true});"
        "document.dispatchEvent(new Event('visibilitychange'))"
    )
    expect(status).to_have_text("paused (tab hidden)")
    page.evaluate(
        "Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
        "document.dispatchEvent(new Event('visibilitychange'))"
    )
    expect(status).to_have_text(re.compile(r"^live · checked [0-3]s ago$"))
    # The aborted polls (and htmx logging them) are the only errors the page logged.
    expected = ("net::ERR_FAILED", "htmx:sendError,", "htmx:afterRequest,")
    assert console_errors
    assert [e for e in console_errors if not any(x in e for x in expected)] == []
