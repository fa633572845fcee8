"""The KV inspector in Chromium: an operator opens KV from the menu, picks a
reconciler's namespace among others, narrows it to a key prefix through the form,
reads a cursor as indented JSON and a fingerprint as hex, follows the cursor's writer
to its Work, comes back and opens the cursor as it was before its last write (the old
page number, the key deleted since listed again), then returns to now; on a 360 px
phone and to axe in both themes at each step, with no console error. The same
journey's links and form work without JavaScript."""

import json
import re

import pytest

from tests.console import factories as f
from tests.console.browser.pagechecks import fits_and_passes_axe
from tests.console.browser.support import TIMEOUT, sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

NS = "recon/github.acme-industries.eu-west-1"
ROWS = "#kv-keys tbody tr"


def seed() -> tuple[int, int]:
    """A reconciliation pass by one attempt and a later one by another, among other
    namespaces; returns the versions the two passes committed as."""
    for n in range(3):
        f.kv(f"exec/worker-{n}", {"state": b"idle"})
    f.work("w-recon", kind="github.reconcile")
    first = f.start("w-recon")
    cursor = {"page": 1, "etag": 'W/"3f2b8c1e9d4a4e7b"', "since": "2026-12-01T03:00:00Z"}
    then = f.kv(
        NS,
        {
            "cursor/issues": json.dumps(cursor).encode(),
            "cursor/pulls": b'{"page": 9}',
            "fingerprint/issues": bytes.fromhex("9c1f00ff") * 8,
            "observed/issue-17": b"open",
            "lock": b"",
        },
        by=first,
        event="ev-pass-1",
        actor="operator:alice",
    )
    f.work("w-recon-2", kind="github.reconcile")
    second = f.start("w-recon-2")
    cursor |= {"page": 2}
    later = f.kv(
        NS,
        {"cursor/issues": json.dumps(cursor).encode(), "observed/issue-17": None},
        by=second,
    )
    return then, later


def test_an_operator_inspects_a_namespace_its_writer_and_its_past(
    live_server, browser_page, console_errors
) -> None:
    from playwright.sync_api import expect

    page = browser_page
    _, later = seed()
    then = later - 1  # just before the second pass: the first pass's values
    sign_in(page, live_server, "/dashboard")
    page.get_by_role("link", name="the KV inspector").click()
    page.wait_for_url(lambda url: url.endswith("/kv"))
    expect(page.locator("#kv-namespaces li")).to_have_count(4)
    assert fits_and_passes_axe(page) == []

    # The namespace from the list, then a key prefix through the form (a GET).
    page.locator("#kv-namespaces").get_by_role("link", name=NS).click()
    page.wait_for_url(lambda url: "namespace=recon%2Fgithub" in url)
    expect(page.locator(ROWS)).to_have_count(4)
    page.fill("#kv-prefix", "cursor/")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(lambda url: "prefix=cursor%2F" in url)
    expect(page.locator(ROWS)).to_have_count(2)
    issues = page.locator("#kv-keys tr[data-key='cursor/issues']")
    expect(issues.locator("pre.kv-json")).to_contain_text('"page": 2,\n  "etag"')
    expect(issues.locator(".kv-form")).to_contain_text("JSON")
    assert fits_and_passes_axe(page) == []

    # A fingerprint's bytes as hex, under another prefix.
    page.fill("#kv-prefix", "fingerprint/")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(lambda url: "prefix=fingerprint%2F" in url)
    hexed = page.locator("#kv-keys tr[data-key='fingerprint/issues'] pre.kv-hex")
    expect(hexed).to_contain_text("9c 1f 00 ff 9c 1f 00 ff")
    page.go_back()
    page.wait_for_url(lambda url: "prefix=cursor%2F" in url)

    # Who wrote the cursor: the second pass's attempt, whose Work opens from the row.
    issues = page.locator("#kv-keys tr[data-key='cursor/issues']")
    expect(issues).to_contain_text("attempt 1")
    issues.locator("a.kv-work").click()
    page.wait_for_url(lambda url: url.endswith("/works/w-recon-2"), timeout=TIMEOUT)
    page.go_back()
    page.wait_for_url(lambda url: "prefix=cursor%2F" in url)

    # The cursor before its last write: as of the first pass, page 1 again.
    page.locator("#kv-keys tr[data-key='cursor/issues']").get_by_role(
        "link", name="before it"
    ).click()
    page.wait_for_url(lambda url: f"as_of=v{then}" in url)
    expect(page.locator("#kv-then")).to_contain_text(f"As of store version {then}")
    issues = page.locator("#kv-keys tr[data-key='cursor/issues']")
    expect(issues.locator("pre.kv-json")).to_contain_text('"page": 1,')
    expect(issues.locator("a.kv-work")).to_have_text("w-recon")
    expect(issues).to_contain_text("operator:alice")  # the first pass's Event's actor
    assert fits_and_passes_axe(page) == []

    # The whole namespace then: the issue observed then and deleted since is there.
    page.fill("#kv-prefix", "")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(lambda url: "prefix=&" in url and f"as_of=v{then}" in url)
    expect(page.locator("#kv-keys tr[data-key='observed/issue-17']")).to_contain_text("open")
    expect(page.locator(ROWS)).to_have_count(5)
    page.get_by_role("link", name="Show the values now").click()
    page.wait_for_url(lambda url: "as_of" not in url)
    expect(page.locator(ROWS)).to_have_count(4)
    expect(page.locator("#kv-then")).to_have_count(0)
    assert console_errors == []


def test_the_inspector_works_without_javascript(browser, live_server, alice) -> None:
    from playwright.sync_api import expect

    then, _ = seed()
    context = browser.new_context(viewport={"width": 360, "height": 800}, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server, "/kv")
    page.locator("#kv-namespaces").get_by_role("link", name=NS).click()
    page.wait_for_url(lambda url: "namespace=" in url)
    page.fill("#kv-as-of", f"v{then}")
    page.fill("#kv-prefix", "observed/")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(rf"prefix=observed%2F&as_of=v{then}"))
    expect(page.locator(ROWS)).to_have_count(1)
    expect(page.locator("#kv-keys tr[data-key='observed/issue-17']")).to_be_visible()
    context.close()
