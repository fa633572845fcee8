"""A Work's whole causation, in Chromium: an operator goes from a Work's page to its
causation (a webhook that created it, an upstream cause, a deep chain of its own Events
over two pages, an operator's action) and follows the link to the Event that started
it. No sideways scroll at 360 px however deep the tree, axe-clean in both themes."""

import re

import pytest

from storage import Event, Execution, Tx, Work
from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

WORK = "charge/2026-12-06/" + "x" * 60  # a long ID with slashes: it must wrap at 360 px


def seed() -> None:
    f.event("upstream-delivery", source="stripe", type="charge.created")

    def opened(tx: Tx) -> None:
        tx.accept_event(
            Event(
                id="hook-1",
                source="github",
                delivery_id="d-hook-1",
                type="charge.webhook",
                causation_id="upstream-delivery",
            )
        )
        tx.put_work(Work(id=WORK, kind="billing.charge"))
        tx.put_execution(Execution(id=f"{WORK}-x1", work_id=WORK, attempt=1))
        tx.mark_routed("hook-1", WORK, "routed")

    f.transact(opened)

    def steps(tx: Tx) -> None:
        cause = "hook-1"
        for n in range(60):  # each caused by the one before: 60 levels deep
            event_id = f"step-{n:02d}-" + "y" * 40
            tx.accept_event(
                Event(
                    id=event_id,
                    source=f"conduit:{WORK}",
                    delivery_id=f"emit/{n}",
                    type="billing.step",
                    work_id=WORK,
                    causation_id=cause,
                )
            )
            cause = event_id

    f.transact(steps)
    f.event("nudge", source="core.manual", type="core.manual", work_id=WORK, actor="operator:alice")


def test_from_a_work_to_its_causation_and_the_event_that_started_it(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    seed()
    sign_in(page, live_server, f"/works/{WORK}")
    page.locator("a", has_text="whole causation").click()
    page.wait_for_url(re.compile(r"/causation/charge[^?]*$"))
    expect(page.locator("h1")).to_contain_text("Causation of billing.charge")
    rows = page.locator("ol.causation > li")
    expect(rows.first).to_contain_text("charge.created")  # the root, from upstream
    expect(page.locator("#causation-h")).to_contain_text("this Work's 1\u201350 of 62")
    created = page.locator("ol.causation > li", has_text="created Work billing.charge")
    expect(created).to_contain_text("charge.webhook")
    expect(created).to_contain_text("started attempt 1")
    assert sideways(page) == 0
    assert fits_and_passes_axe(page) == []

    page.locator("a[rel=next]").click()
    page.wait_for_url(re.compile(r"\?after=\d+$"))
    expect(page.locator("#causation-h")).to_contain_text("this Work's 51\u201362 of 62")
    expect(page.locator("ol.causation")).to_contain_text("operator:alice")
    assert fits_and_passes_axe(page) == []

    page.locator("a", has_text="First page").click()
    page.wait_for_url(re.compile(r"/causation/charge[^?]*$"))
    page.locator("ol.causation > li", has_text="created Work billing.charge").locator(
        "a", has_text="charge.webhook"
    ).click()
    page.wait_for_url(re.compile(r"/events/hook-1$"))
    expect(page.locator("h1")).to_contain_text("charge.webhook")
    expect(page.locator(".chain")).to_contain_text("charge.created")
    assert console_errors == []
