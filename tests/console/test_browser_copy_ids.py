"""Shortened IDs in a real browser: a UUID takes about eight characters of a row, its
whole text stays in the page, and the copy button puts the whole ID on the clipboard
and says "Copied" in a live region (one listener in console.js, no inline script)."""

import os

import pytest

from tests.console import factories as f
from tests.console import test_browser
from tests.console.test_browser import sign_in

browser_page = test_browser.browser_page
console_errors = test_browser.console_errors

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # seeding runs in Playwright's thread

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

UUID = "0193a4f2-9c1e-7d3b-8f00-5e6a7b8c9d0e"


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
