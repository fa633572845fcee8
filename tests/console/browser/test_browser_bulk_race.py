"""A bulk action while someone else acts, in Chromium (issue 34: "Cancel 32 Work" ended
"27 done · 0 skipped · 0 left" when 5 had been cancelled meanwhile). An operator
confirms "Cancel all matching" over the exhausted Work; between the confirmation and
the click another operator cancels two of them and the runtime picks one up again.
The result accounts for every Work the confirmation promised: done, or no longer
matching with who changed it. With script (htmx, the progress region) and without."""

import pytest

from console.actions.common import new_token
from console.actions.work import do_cancel_work
from storage.default import default_store
from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe
from tests.console.browser.support import TIMEOUT, sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


@pytest.mark.parametrize("script", [True, False], ids=["htmx", "no-script"])
def test_a_bulk_result_accounts_for_work_another_actor_changed(live_server, browser, alice, script):
    from playwright.sync_api import expect

    ids = [f"charge-{n:02d}" for n in range(12)]
    f.exhausted_at_once(*ids, message="card declined")
    context = browser.new_context(
        viewport={"width": 1440, "height": 900}, java_script_enabled=script
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    sign_in(page, live_server, "/?is=exhausted")
    page.click("button[value=cancel-all]")
    expect(page.locator("h1")).to_have_text("Cancel 12 Work")
    page.fill("[name=reason]", "the card processor is down for good")

    # Meanwhile: bob cancels two from his own screen; the runtime retries one.
    for work_id in ("charge-03", "charge-07"):
        do_cancel_work(
            default_store(), username="bob", work_id=work_id, reason="dup", token=new_token()
        )
    f.pending("charge-09")

    page.locator(".action-form button[type=submit]").click()
    expect(page.locator("h1")).to_have_text(
        "Cancel: 9 done, 0 skipped, 3 no longer matching, 0 left", timeout=30_000
    )
    expect(page.locator(".promised")).to_contain_text("promised 12 Work")
    gone = page.locator("#gone tbody tr")
    expect(gone).to_have_count(3)
    expect(gone.nth(0)).to_contain_text("charge-03")
    expect(gone.nth(0)).to_contain_text("cancelled")
    expect(gone.nth(0)).to_contain_text("operator:bob")
    expect(gone.nth(2)).to_contain_text("charge-09")
    expect(gone.nth(2)).to_contain_text("ready")
    expect(page.locator("#done-list")).to_contain_text("cancelled")
    if script:  # axe runs as a script in the page: not in a page without script
        assert fits_and_passes_axe(page) == []
    assert errors == []
    context.close()
