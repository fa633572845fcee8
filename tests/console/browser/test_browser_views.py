"""Saved views and the keyboard in a real browser: filter the Work list, save the
filter as a view, reload, open it from the Views menu, move through rows with j/k,
tick one with x, switch the theme with t, and read the keys in the ? overlay."""

import os
import re

import pytest

from console.saved.models import SavedView
from tests.console import factories as f
from tests.console.browser.support import sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def test_save_a_view_open_it_from_the_menu_and_drive_the_list_by_keys(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    for i in range(3):
        f.exhausted(f"stuck-{i}")
    f.completed("done-0")
    sign_in(page, live_server, "/")

    # Filter the list (the form), then save the filter under a name (a form POST).
    page.locator("#filters").get_by_label("exhausted only").check()
    page.locator("#filters").get_by_role("button", name="Apply").click()
    # The form sends every field, empty ones too; the view keeps the canonical filter.
    expect(page).to_have_url(re.compile(r"[?&]is=exhausted"))
    page.locator("#views-menu > summary").click()
    page.get_by_label("Save this filter as").fill("Stuck work")
    page.get_by_role("button", name="Save view").click()
    expect(page.locator("#messages")).to_contain_text("Saved view “Stuck work”.")
    assert SavedView.objects.get().query == "is=exhausted"

    # Elsewhere, reload, and come back through the menu.
    page.goto(f"{live_server.url}/?state=completed")
    page.reload()
    page.locator("#views-menu > summary").click()
    page.locator("#views-menu").get_by_role("link", name="Stuck work").click()
    if os.environ.get("VIEWS_SHOT"):
        page.locator("#views-menu > summary").click()
        page.screenshot(path=os.environ["VIEWS_SHOT"])
        page.locator("#views-menu > summary").click()
    expect(page).to_have_url(re.compile(r"/\?is=exhausted$"))
    rows = page.locator("#workspace tbody tr")
    expect(rows).to_have_count(3)

    # j/k move the row focus, x ticks the focused row (and pauses the live updates).
    page.locator("h1").click()  # nothing typed into: the keys are the page's
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("j")
    expect(rows.nth(1)).to_have_class(re.compile(r"\bkbd-focus\b"))
    expect(page.locator("main tr.kbd-focus")).to_have_count(1)
    page.keyboard.press("x")
    expect(rows.nth(1).locator("input[name=work]")).to_be_checked()
    expect(page.locator("[data-selected-count]")).to_contain_text("1 selected")
    page.keyboard.press("x")
    expect(rows.nth(1).locator("input[name=work]")).not_to_be_checked()
    page.keyboard.press("Control+k")  # a browser's shortcut, not the list's
    expect(rows.nth(1)).to_have_class(re.compile(r"\bkbd-focus\b"))

    # r asks the live region for news now (its poll), rather than at the next interval.
    with page.expect_request(lambda r: "stamp=" in r.url and "is=exhausted" in r.url):
        page.keyboard.press("r")
    # A swap of the region (as a poll's answer does) keeps the focus on the same Work,
    # known by its link: swapped here directly, so whatever a poll decides to show.
    focused = rows.nth(1).locator("a[href^='/works/']").first.get_attribute("href")
    page.evaluate("document.querySelector('#workspace').dataset.before = '1'")
    page.evaluate("htmx.ajax('GET', location.href, {target: '#workspace', swap: 'outerHTML'})")
    expect(page.locator("#workspace[data-before]")).to_have_count(0)
    focus_link = page.locator("main tr.kbd-focus a[href^='/works/']").first
    expect(focus_link).to_have_attribute("href", focused)
    assert page.evaluate("document.activeElement.classList.contains('kbd-focus')")

    # Typing in a field is typing: "j" lands in the search box, and "/" got it there.
    page.keyboard.press("/")
    expect(page.locator("input[name=q]")).to_be_focused()
    page.keyboard.type("jk")
    expect(page.locator("input[name=q]")).to_have_value("jk")
    expect(focus_link).to_have_attribute("href", focused)
    page.locator("h1").click()

    # t clicks the theme toggle, which cycles system -> light -> dark.
    before = page.locator("[data-theme-toggle]").get_attribute("data-theme-current")
    page.keyboard.press("t")
    expect(page.locator("[data-theme-toggle]")).not_to_have_attribute(
        "data-theme-current", before or ""
    )

    # ? opens the help: a modal dialog naming every key; Esc closes it.
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    for key in ("/", "j", "k", "x", "r", "t", "?"):
        expect(dialog.locator("kbd", has_text=re.compile(f"^{re.escape(key)}$"))).to_have_count(1)
    page.keyboard.press("j")  # the list does not move under an open dialog
    expect(focus_link).to_have_attribute("href", focused)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert console_errors == []


def test_slash_on_a_phone_unfolds_the_filters_and_focuses_the_search(
    live_server, browser_page, console_errors
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size({"width": 360, "height": 800})
    f.work("w1")
    sign_in(page, live_server, "/")
    # On a phone the results come first: the filters start folded away.
    expect(page.locator("#filters-disclosure")).not_to_have_attribute("open", "")
    page.locator("h1").click()
    page.keyboard.press("/")
    expect(page.locator("input[name=q]")).to_be_focused()
    expect(page.locator("#filters-disclosure")).to_have_attribute("open", "")
    assert console_errors == []
