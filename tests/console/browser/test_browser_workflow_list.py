"""The Workflows list read at a glance (issue 33), in Chromium: a page of 50 rows, each
on one line with its actions as short links (as on the Work list), Continue only
where the status map and the attempt allow it; a row's confirmation opens in place
under it and returns to the list; on a phone the facets fold away and nothing
scrolls sideways; axe finds nothing serious with actions and a confirmation shown."""

import pytest
from django.contrib.auth.models import Permission

from storage.routed.enums import WorkflowStatus
from tests.console import routedfactories as rf
from tests.console.browser.pagechecks import fits_and_passes_axe, serious, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

ROWS = "#workflows tbody > tr[id^=row-]"
# One line of 0.875rem text with its cell padding is about 30 px; a touch target
# (44 px, phone layout) sets the floor on a phone. The stacked buttons were ~115 px.
DESKTOP_ROW = 40
PHONE_ROW = 56


def seed() -> dict[str, str]:
    """Fifty workflows: mostly running (the busy case), and one of each state an
    operator acts on. Returns the IDs of the ones the journey names."""
    dep = rf.deployment("pkg.fan-out-with-a-long-package-name", "12.4.0-rc.3").deployment_id
    named = {
        "replan": rf.needs_replan(dep).receipt.workflow_id,
        "paused": rf.paused(dep).receipt.workflow_id,
        "failed": rf.failed(dep)[0].receipt.workflow_id,
    }
    admission, attempt = rf.running(dep)
    rf.end_attempt(attempt)  # its attempt failed; the supervisor has not ended it
    named["stalled"] = admission.receipt.workflow_id
    for _ in range(45):
        rf.running(dep)
    named["running"] = rf.running(dep)[0].receipt.workflow_id
    return named


def row_heights(page) -> list[float]:
    return page.eval_on_selector_all(
        ROWS, "rows => rows.map(r => r.getBoundingClientRect().height)"
    )


def actions_of(page, workflow_id: str) -> list[str]:
    return page.locator(f"#row-{workflow_id} [data-routed-action]").evaluate_all(
        "links => links.map(a => a.dataset.routedAction)"
    )


def test_a_page_of_fifty_workflows_reads_at_a_glance_and_acts_in_place(
    live_server, browser_page, console_errors, alice
):
    from playwright.sync_api import expect

    for codename in ("routed_control", "routed_amend_limits"):
        alice.user_permissions.add(Permission.objects.get(codename=codename))
    ids = seed()
    page = browser_page

    sign_in(page, live_server, "/routed/workflows?size=50")
    page.select_option("#poll-every", "0")  # a still page: nothing swaps under the test
    expect(page.locator(ROWS)).to_have_count(50)
    heights = row_heights(page)
    assert max(heights) <= DESKTOP_ROW, heights
    # At a glance: most of the page's rows are on the first screen (five were).
    first_screen = page.eval_on_selector_all(
        ROWS, "rows => rows.filter(r => r.getBoundingClientRect().bottom <= innerHeight).length"
    )
    assert first_screen >= 15
    assert sideways(page) <= 0

    # Continue only where the map and the attempt allow it.
    assert actions_of(page, ids["running"]) == ["pause", "amend-limits", "cancel"]
    assert actions_of(page, ids["stalled"]) == ["pause", "continue", "amend-limits", "cancel"]
    assert "continue" in actions_of(page, ids["replan"])
    assert "continue" in actions_of(page, ids["paused"])
    assert actions_of(page, ids["failed"]) == ["restart"]
    assert serious(page) == []

    # A row's action opens its confirmation under the row, then returns to the list.
    running = ids["running"]
    page.locator(f'#row-{running} [data-routed-action="pause"]').click()
    confirm = page.locator(f"#confirm-{running} .inline-confirm.routed")
    expect(confirm).to_contain_text(f"Pause {running}?")
    assert serious(page) == []
    # j/k step from workflow to workflow, over the open confirmation's row.
    second = page.locator(ROWS).nth(1).get_attribute("id")
    page.locator("h1").click()  # the focus out of the link, as a reader's would be
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("tr.kbd-focus")).to_have_attribute("id", second or "")
    confirm.locator("button[data-close-confirm]").click()  # "Keep it"
    expect(confirm).to_have_count(0)
    assert max(row_heights(page)) <= DESKTOP_ROW
    page.locator(f'#row-{running} [data-routed-action="pause"]').click()
    confirm.locator("textarea[name=reason]").fill("provider outage")
    confirm.locator('[data-confirm-action="pause"]').click()
    expect(page).to_have_url(f"{live_server.url}/routed/workflows?size=50")
    expect(page.locator(f"#row-{running} .badge")).to_have_text("pause requested")
    status = rf.routed().view(lambda r: r.get_workflow(running)).record.status
    assert status is WorkflowStatus.PAUSE_REQUESTED

    # A phone: the facets fold away, the rows stay one line, nothing scrolls sideways.
    for width, height in ((390, 844), (360, 800)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/routed/workflows?size=50")
        facets = page.locator("#facets-disclosure")
        expect(facets.locator("summary")).to_be_visible()
        expect(page.locator("#facet-status")).to_be_hidden()
        assert max(row_heights(page)) <= PHONE_ROW
        assert sideways(page) <= 0, f"{sideways(page)} px sideways at {width} px"
        first_row = page.locator(ROWS).first.bounding_box()
        assert first_row is not None
        assert first_row["y"] < height  # the rows come first, not the facets
        # A row's actions are one button pinned at the row's end, on screen without
        # scrolling the table; its confirmation opens in view.
        row = page.locator(ROWS).nth(2)
        menu = row.locator("details.row-menu > summary")
        expect(menu).to_be_visible()
        box = menu.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= width
        expect(row.locator('[data-routed-action="cancel"]')).to_be_hidden()
        menu.click()
        row.locator('[data-routed-action="cancel"]').click()
        shown = page.locator(".routed-confirm-row .inline-confirm.routed")
        expect(shown).to_contain_text("Cancel")
        box = shown.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width
        assert shown.evaluate("el => el.scrollWidth <= el.clientWidth")  # nothing cut off
        assert fits_and_passes_axe(page, width, height) == []
        shown.locator("button[data-close-confirm]").click()
        facets.locator("summary").click()
        expect(page.locator("#facet-status")).to_be_visible()
        assert fits_and_passes_axe(page, width, height) == []
    assert console_errors == []
