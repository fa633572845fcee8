"""Every page on a phone and to axe-core: no page is wider than a 360 px screen, and
axe (vendored, tests/vendor/) finds no serious or critical violation in the light or
the dark theme, at 360x800 and at 1440x900.

One browser serves the session (the conftest's); each size is one test that seeds the store once
(through the same factories as the other console tests, long IDs in every region) and
walks every page, collecting what it finds, so one run reports every page at once:
seeding and signing in per page would cost more than the checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest

from tests.console import factories as f
from tests.console import routedfactories as rt
from tests.console import run_record_factories as rf
from tests.console.browser.pagechecks import fits_and_passes_axe
from tests.console.browser.support import TIMEOUT

PHONE = {"width": 360, "height": 800}
DESKTOP = {"width": 1440, "height": 900}

# IDs as operators meet them: UUIDs, a long hex digest, a dotted path with no break.
UUID = "3f2b8c1e-9d4a-4e7b-b6c2-5a1f0e9d8c7b"
DIGEST = "sha256-" + "9c1f" * 16
DOTTED = "tenant.acme-industries.eu-west-1.billing.invoice-run.2026-12-01T03:00:00Z"
KV_NAMESPACE = f"recon/{DOTTED}"

# slow: each size walks about 30 pages with two axe passes each (axe reads the whole
# document); 4 minutes a size with the machine at load 16, far less on an idle one.
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def seed() -> dict[str, str]:
    """The store every page reads; returns the generated IDs the paths name."""
    f.scope("acme", name="Acme Corp")
    f.scope(f"acme/{UUID}", parent="acme", name="Acme EU, the very long-named subsidiary")
    kinds = ["billing.charge", "deploy.service.rollout-with-a-long-name"]
    for i, work_id in enumerate([UUID, DIGEST, DOTTED, *(f"wrk-{n:03d}" for n in range(12))]):
        kw = {"kind": kinds[i % 2], "scope_id": "acme", "keys": [("github.acme", work_id)]}
        match i % 6:
            case 0:
                f.exhausted(work_id, message="upstream 503: " + "connection reset " * 8, **kw)
            case 1:
                f.running(work_id, lease=600, **kw)
            case 2:
                f.parked(work_id, **kw)
            case 3:
                f.failed(work_id, message="card declined " * 10, **kw)
            case 4:
                f.completed(work_id, **kw)
            case _:
                f.work(work_id, **kw)
        f.event(f"ev-{i:03d}-{UUID}", work_id=work_id, data={"ref": DIGEST}, route="routed")
    f.running("expired-lease-" + UUID, lease=0.001)  # expired by the time a page reads it
    # KV under the running Work's lease, then changed by the control plane: a long JSON
    # cursor, bytes, a long key; the inspector's "before it" opens the first write.
    writer = f.transact(lambda tx: tx.live_executions(DIGEST)[0])
    cursor = {"since": DOTTED, "etag": DIGEST, "pages": list(range(40))}
    first = {f"cursor/{UUID}": json.dumps(cursor).encode(), "fingerprint": bytes(range(64))}
    f.kv(KV_NAMESPACE, first | {f"observed/{DOTTED}": b"open"}, by=writer, event="ev-kv")
    f.kv(KV_NAMESPACE, {f"cursor/{UUID}": b'{"page": 2}', f"observed/{DOTTED}": None})
    f.timer(f"timer-{UUID}", work_id=UUID, fire_in=-120)
    f.backoff("backoff-" + DIGEST)
    for n in range(3):  # the bulk-result page retries these, last, touching nothing else
        f.exhausted(f"bulk-{n}-{UUID}", kind="bulk.target")
    rf.checkout(f"checkout/{UUID}")
    rf.payment("payment/7", failures=2)
    rf.sparse_feed("feed/3")
    workflow = rt.running()[0].receipt.workflow_id
    rt.failed()
    rt.pipeline()
    rt.paused()
    return {"workflow": workflow}


def sign_in(browser, url: str) -> object:
    """alice's page, live updates off so that no poll swaps a region under axe."""
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.goto(f"{url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "password")
    page.click("button[type=submit]")
    page.wait_for_url(lambda u: "/accounts/login/" not in u)
    page.select_option("#poll-every", "0")
    page.wait_for_selector("#poll-every option[value='0'][selected]", state="attached")
    return page


@dataclass(frozen=True)
class Visit:
    path: str
    then: Callable[[object], None] | None = None  # what to do on the page before checking
    signed_in: bool = True


def open_before_last_write(page) -> None:
    page.locator("#kv-keys a", has_text="before it").first.click()
    page.wait_for_selector("#kv-then")


def open_inline_confirmation(page) -> None:
    page.locator("a[data-inline-open]").first.click()
    page.wait_for_selector("[data-inline-confirm]")


def open_bulk_confirmation(page) -> None:
    page.click("#workspace button[value=retry-all]")
    page.wait_for_selector("form[data-bulk-run]")


def run_bulk_retry(page) -> None:
    open_bulk_confirmation(page)
    page.fill("form[data-bulk-run] textarea[name=reason]", "upstream fixed")
    page.click("form[data-bulk-run] button[type=submit]")
    page.wait_for_selector("#main h1:has-text('done,')")


PAGES = {
    "dashboard": Visit("/dashboard"),
    "scope dashboard": Visit(f"/dashboard/acme/{UUID}"),
    "whole-history dashboard": Visit("/dashboard?window=all"),
    "work list": Visit("/"),
    "exhausted list": Visit("/?is=exhausted&sort=updated"),
    "work page": Visit(f"/works/{UUID}"),
    "running work page": Visit(f"/works/{DIGEST}"),
    "events": Visit("/events"),
    "event page": Visit(f"/events/ev-000-{UUID}"),
    "executions": Visit("/executions"),
    "executions by lease expiry": Visit("/executions?sort=lease&expiring=1h"),
    "attempt page": Visit(f"/attempts/{UUID}-x1"),
    "key page": Visit(f"/keys?source=github.acme&id={UUID}"),
    "operator page": Visit("/operators/alice"),
    "events by actor": Visit("/events?mine=1&since=24h"),
    "timers": Visit("/timers"),
    "waits": Visit("/waits"),
    # A later page (after a cursor before every row): the pager with all its links.
    "timers, a later page": Visit("/timers?due=1&after=1.a"),
    "timers to come": Visit("/timers/ahead?window=24h&scope=acme&kind=billing.charge"),
    "waits, a later page": Visit("/waits?size=25&after=1.a"),
    "scopes": Visit("/scopes"),
    "kv namespaces": Visit("/kv"),
    "kv keys": Visit("/kv?" + urlencode({"namespace": KV_NAMESPACE})),
    "kv keys as of a version": Visit(
        "/kv?" + urlencode({"namespace": KV_NAMESPACE}), open_before_last_write
    ),
    "errors": Visit("/errors"),
    "runs": Visit("/run-records"),
    "run page": Visit(f"/run-records/checkout/{UUID}"),
    "run page with retries": Visit("/run-records/payment/7"),
    "run page with a stream": Visit("/run-records/feed/3"),
    "retry confirmation": Visit(f"/actions/retry/{UUID}?next=/"),
    "cancel confirmation": Visit(f"/actions/cancel/{DOTTED}?next=/"),
    "inline confirmation": Visit("/?is=exhausted", open_inline_confirmation),
    "bulk confirmation": Visit("/?kind=bulk.target", open_bulk_confirmation),
    "saved views": Visit("/views"),
    "routed workflows": Visit("/routed/workflows"),
    "routed workflow": Visit("/routed/workflows/{workflow}"),
    "routed deployments": Visit("/routed/deployments"),
    "routed invocations": Visit("/routed/invocations"),
    "404": Visit(f"/works/missing-{UUID}"),
    "400": Visit("/?after=not-a-cursor"),
    "sign-in": Visit("/accounts/login/", signed_in=False),
    # Last: it changes the bulk.target Work (and nothing another page shows).
    "bulk result": Visit("/?kind=bulk.target", run_bulk_retry),
}


@pytest.fixture
def seeded(alice) -> dict[str, str]:
    return seed()


def check(page, url: str, visit: Visit, size: dict[str, int], ids: dict[str, str]) -> list[str]:
    """What is wrong with one page at one size, in both themes ([] when nothing)."""
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="light")
    page.goto(url + visit.path.format(**ids))
    if visit.then:
        visit.then(page)
    return fits_and_passes_axe(page, size["width"], size["height"])


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["360x800", "1440x900"])
def test_no_page_scrolls_sideways_and_axe_finds_nothing_serious_in_either_theme(
    size, seeded, browser, live_server
):
    signed_in = sign_in(browser, live_server.url)
    anonymous = browser.new_context().new_page()
    found = {}
    for name, visit in PAGES.items():
        page = signed_in if visit.signed_in else anonymous
        if wrong := check(page, live_server.url, visit, size, seeded):
            found[name] = wrong
    signed_in.context.close()
    anonymous.context.close()

    assert not found, "\n".join(f"{name}: {wrong}" for name, wrong in found.items())


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_theme_button_switches_at_once_and_the_choice_survives_a_reload(
    alice, browser, live_server
):
    page = sign_in(browser, live_server.url)
    page.emulate_media(color_scheme="light")
    page.goto(f"{live_server.url}/events")
    toggle = page.locator("[data-theme-toggle]")
    background = "getComputedStyle(document.body).backgroundColor"
    light = page.evaluate(background)

    toggle.click()  # system -> light
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    toggle.click()  # light -> dark
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    dark = page.evaluate(background)
    page.wait_for_load_state("networkidle")  # the background post that stores it
    page.reload()

    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate(background) == dark != light
    assert toggle.get_attribute("value") == "system"
    toggle.click()  # dark -> system: the device's (light) scheme again
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.hasAttribute('data-theme')") is False
    assert page.evaluate(background) == light
    page.context.close()
