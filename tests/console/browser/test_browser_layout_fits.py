"""The header and the Work list at real sizes, in Chromium (issue 34).

At 1440x900 and 1280x800 the Work list's default columns and each row's Retry... and
Cancel... are on screen with no sideways scrolling (the column chooser keeps the
rest), and at 1440 px the header is one row: the theme button does not wrap onto a
row of its own. On a phone (390x844) the header is two rows, not 337 px: the links
fold into a menu that opens without JavaScript; the user chip reads "alice
(operator)", and the copy-ID buttons are 44 px targets as the README promises. At
360 px nothing scrolls sideways and axe finds nothing serious in either theme."""

import pytest

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe, sideways
from tests.console.browser.support import TIMEOUT, sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

MESSAGE = "upstream returned 502 Bad Gateway after 3 tries (req 3f9a0c1e) on POST /v2/charges"


def seed() -> None:
    f.scope("acme-eu-production-payments", name="Acme EU production")
    for n in range(12):
        f.exhausted(
            f"wrk-{n:03d}-0f3a9c2e-7b1d-4e8a-9c3f-2a1b0c9d8e7f",
            kind="billing.charge.refund.partial",
            scope_id="acme-eu-production-payments",
            message=MESSAGE,
        )
    f.parked("parked-1", kind="billing.charge")


def on_screen(page, selector: str) -> list[str]:
    """Each element of ``selector`` that is not wholly inside the window."""
    return page.evaluate(
        """s => [...document.querySelectorAll(s)].filter(e => {
             const r = e.getBoundingClientRect();
             return r.left < 0 || r.right > window.innerWidth || r.width === 0;
           }).map(e => e.outerHTML.slice(0, 80))""",
        selector,
    )


@pytest.mark.parametrize("size", [(1440, 900), (1280, 800)], ids=["1440x900", "1280x800"])
def test_the_work_lists_columns_and_row_actions_fit_without_sideways_scroll(
    live_server, browser_page, console_errors, size
):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size({"width": size[0], "height": size[1]})
    seed()
    sign_in(page, live_server, "/")
    headers = page.locator(".results table.grid thead th").all_inner_texts()
    assert [h.strip().upper() for h in headers if h.strip()] == [
        "WORK",
        "STATE",
        "LAST ATTEMPT",
        "KIND",
        "SCOPE",
        "UPDATED",
        "ACTIONS",
    ]
    wrap = page.evaluate(
        "(() => { const w = document.querySelector('.results .table-wrap');"
        " return [w.scrollWidth, w.clientWidth]; })()"
    )
    assert wrap[0] <= wrap[1], f"the list scrolls sideways by {wrap[0] - wrap[1]} px"
    assert sideways(page) == 0
    assert on_screen(page, ".results thead th") == []
    first = page.locator(".results tbody tr").nth(1)
    for verb in ("Retry…", "Cancel…"):
        link = first.locator("td.row-actions a", has_text=verb)
        expect(link).to_be_visible()
    assert on_screen(page, ".results td.row-actions a") == []

    # The chooser keeps the rest: Source comes back when chosen.
    page.locator("summary", has_text="Columns").click()
    page.check("input[name=show][value=source]")
    page.locator("form", has=page.locator("input[name=show]")).locator(
        "button[type=submit]"
    ).click()
    expect(page.locator(".results thead th", has_text="Source")).to_be_visible()
    assert console_errors == []


def test_the_header_is_one_row_at_1440_px(live_server, browser_page):
    page = browser_page
    sign_in(page, live_server, "/")
    brand = page.locator(".brand").bounding_box()
    theme = page.locator(".theme-toggle").bounding_box()
    header = page.locator(".site-header").bounding_box()
    assert brand is not None
    assert theme is not None
    assert header is not None
    assert theme["y"] < brand["y"] + brand["height"], "the theme button wrapped to a new row"
    assert header["height"] < 60


def test_on_a_phone_the_header_is_short_and_the_menu_opens_without_script(
    live_server, browser, alice
):
    """Contexts of their own, JavaScript off then on: the menu is a <details>."""
    from playwright.sync_api import expect

    f.exhausted("stuck-0f3a9c2e-7b1d")
    for script in (False, True):
        context = browser.new_context(
            viewport={"width": 390, "height": 844}, java_script_enabled=script
        )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT)
        sign_in(page, live_server, "/")
        header = page.locator(".site-header").bounding_box()
        assert header is not None
        assert header["height"] <= 120, header  # was 337 px
        nav = page.locator(".site-nav a", has_text="Timers")
        expect(nav).to_be_hidden()
        page.locator("#site-menu > summary").click()
        expect(nav).to_be_visible()
        assert sideways(page) == 0
        assert page.locator(".user-menu summary").inner_text().split() == [
            "alice",
            "(operator)",
        ]
        if script:  # copy buttons exist only with script (console.js shows them)
            box = page.locator(".results .copy-id").first.bounding_box()
            assert box is not None
            assert min(box["width"], box["height"]) >= 44, box
        nav.click()
        expect(page.locator("h1")).to_have_text("Timers")
        context.close()


def test_the_work_list_at_360_px_is_axe_clean_in_both_themes(live_server, browser_page):
    page = browser_page
    seed()
    sign_in(page, live_server, "/")
    page.set_viewport_size({"width": 360, "height": 800})
    page.locator("#site-menu > summary").click()  # the open menu too
    assert fits_and_passes_axe(page) == []
