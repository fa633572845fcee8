"""The browser tests' fixtures: one Chromium for the package's tests on a worker
(``browser``, tests/support/browser.py, which also says why DJANGO_ALLOW_ASYNC_UNSAFE is
set only while it runs), a fresh context (cookies, storage, viewport) per test, and the page's
error log.

A new context costs 0.2 s, Playwright and Chromium started per test 1.5 s (measured);
a context isolates as well: no cookie, storage entry or download outlives its test.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import chromium

from .support import TIMEOUT

HERE = Path(__file__).resolve().parent


# The browser tests run as this many xdist groups (make test's xdist runs --dist
# loadgroup): a group's tests run one after the other on one worker, whose Chromium
# starts once for them. One group held 40% of each engine's test time on one worker; two
# let two workers share them (see the Makefile's TEST_WORKERS).
GROUPS = 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Whole modules, dealt in turn to the groups: a module's journeys share its fixtures,
    # and the split is the same in every run and on every worker. Those holding a slow
    # test are dealt first, so each group gets about half of them: dealt by name alone,
    # one group held 55% of the browser tests' time (1,819 s against 1,495 s, both
    # engines' logs of one make test), dealt slow first 49% (1,635 s against 1,679 s).
    ours = [item for item in items if item.path.is_relative_to(HERE)]
    slow = {item.path for item in ours if item.get_closest_marker("slow")}
    modules = sorted({item.path for item in ours}, key=lambda path: (path not in slow, path))
    group = {path: f"browser-{n % GROUPS}" for n, path in enumerate(modules)}
    for item in items:
        if item.path in group:
            item.add_marker(pytest.mark.xdist_group(group[item.path]))


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Debian's Chromium, launched once for this package's tests."""
    with chromium(TIMEOUT) as launched:
        yield launched


@pytest.fixture
def console_errors() -> list[str]:
    """Errors the page logged: a CSP violation (inline style, eval, a CDN) lands here."""
    return []


@pytest.fixture
def browser_page(browser, live_server, alice, console_errors) -> Iterator[object]:
    """A page at 1440x900 in a context of its own, its errors collected."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    yield page
    context.close()


@pytest.fixture
def oidc_live(oidc, live_server):
    """The test provider (tests/support/oidc.py) with the live server's callback
    registered beside the test client's, which the session's other tests use."""
    oidc.register_console("http://testserver/oidc/callback/", f"{live_server.url}/oidc/callback/")
    return oidc
