"""The Runs section in a real browser (Debian's Chromium through Playwright): the list
leads to a run page whose tree shows scopes, a Retry group, a stream frontier and the
validator's findings, under the strict CSP, collapsible without JavaScript's help; values
decoded beside their restore check, a long one behind a "show all" <details>."""

import pytest

from tests.console import run_record_factories as rf
from tests.console.browser.support import TIMEOUT, sign_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def test_a_run_page_shows_its_tree_from_the_list(live_server, browser_page, console_errors):
    from playwright.sync_api import expect

    page = browser_page
    rf.checkout("checkout/1")
    payment = rf.payment("payment/7", failures=2)
    rf.sparse_feed("feed/3")
    sign_in(page, live_server, "/run-records")
    page.select_option("#poll-every", "0")  # a still page: nothing swaps under the test

    expect(page.locator("h1")).to_have_text("Run records")
    expect(page.locator("#run-records tbody tr")).to_have_count(3)
    page.locator("#run-records a", has_text="payment/7").click()

    expect(page).to_have_url(f"{live_server.url}/run-records/payment/7")
    expect(page.locator("#findings")).to_contain_text("No findings")
    tree = page.locator("#run-tree")
    expect(tree.locator(".run-scope")).to_have_count(1)
    expect(tree.locator(".run-scope summary").first).to_contain_text("Root scope")
    expect(tree.locator(".run-node")).to_have_count(3)
    retry = tree.locator(".retry-group")
    expect(retry).to_have_count(1)
    expect(retry.locator(".attempt")).to_have_count(3)
    expect(retry.locator(".badge-failed")).to_have_count(2)
    expect(retry).to_contain_text("used 3/3")
    root = next(i for i, a in payment.attempts.items() if a.node_id == "charge" and not a.boundary)
    expect(page.locator(f"#attempt-{root} > .badge").first).to_have_text("confirmed")
    # The scope collapses and opens again with no script of ours (a <details>).
    page.locator(".run-scope > summary").first.click()
    expect(tree.locator(".run-node").first).to_be_hidden()
    page.locator(".run-scope > summary").first.click()
    expect(tree.locator(".run-node").first).to_be_visible()

    page.goto(f"{live_server.url}/run-records/feed/3")
    stream = page.locator("#run-streams tbody tr")
    expect(stream).to_have_count(1)
    expect(stream.locator(".seq-acked")).not_to_have_count(0)  # acked above the frontier
    expect(stream.locator(".seq-pending")).not_to_have_count(0)
    expect(page.locator("#run-messages tbody tr")).not_to_have_count(0)
    expect(page.locator("#run-managed .managed")).to_have_count(1)
    assert console_errors == []


def test_a_finding_links_to_the_offending_attempt(live_server, browser_page, console_errors):
    from dataclasses import replace

    from playwright.sync_api import expect

    from storage.run_records import AttemptState

    page = browser_page
    record = rf.until("payment/9", rf.Plan("payment", failures=1))
    # A Retry attempt is never confirmed: break one and let the validator say where.
    bad_id = next(i for i, a in record.attempts.items() if a.boundary)
    confirmed = replace(record.attempts[bad_id], state=AttemptState.CONFIRMED)
    rf.save(replace(record, attempts={**record.attempts, bad_id: confirmed}))
    sign_in(page, live_server, "/run-records/payment/9")
    page.select_option("#poll-every", "0")

    findings = page.locator("#findings tbody tr")
    expect(findings).not_to_have_count(0)
    link = page.locator(f'#findings a[href="#attempt-{bad_id}"]').first
    expect(link).to_be_visible(timeout=TIMEOUT)
    link.click()

    expect(page).to_have_url(f"{live_server.url}/run-records/payment/9#attempt-{bad_id}")
    expect(page.locator(f"#attempt-{bad_id} .finding-mark")).to_be_visible()
    assert console_errors == []


def test_a_long_decoded_value_opens_with_show_all(live_server, browser_page, console_errors):
    from dataclasses import replace

    from playwright.sync_api import expect

    from demo import values

    page = browser_page
    record = rf.until("checkout/8", rf.Plan("checkout"))
    lines = tuple(values.Line(f"sku-{i:04d}", i, 100 + i) for i in range(80))
    order = values.CODECS.ready_value("order", values.Order("o-8", lines, None, "the end"))
    root = record.scopes[record.root_scope]
    node = root.nodes["validate"]
    node = replace(node, outputs=(order, *node.outputs[1:]))
    root = replace(root, nodes={**root.nodes, "validate": node})
    rf.save(replace(record, scopes={**record.scopes, record.root_scope: root}))
    sign_in(page, live_server, "/run-records/checkout/8")
    page.select_option("#poll-every", "0")  # a still page: nothing swaps under the test

    cell = page.locator("tr", has=page.locator("td.mono", has_text="order")).locator("td.decoded")
    expect(cell.first).to_contain_text("✓ restores as Order")
    show_all = cell.first.locator("details.show-all")
    expect(show_all.locator("pre")).to_be_hidden()
    show_all.locator("summary").click()
    expect(show_all.locator("pre")).to_be_visible()
    expect(show_all.locator("pre")).to_contain_text("note='the end'")
    warnings = page.locator("tr", has=page.locator("td.mono", has_text="warnings"))
    expect(warnings.locator("td.decoded").first).to_contain_text("Warnings(items=())")
    assert console_errors == []
