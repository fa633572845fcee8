"""The browser tests' fixtures: a fresh context (cookies, storage, viewport) per test on
the session's one Chromium (``browser``, tests/conftest.py, which the deploy suite
shares: Playwright's sync API runs one instance per thread), and the page's error log.

Playwright's sync API keeps an event loop in the test thread, where Django refuses
database calls unless DJANGO_ALLOW_ASYNC_UNSAFE is set; the seeding helpers run there
while the live server answers from its own thread, so it is set here, once, for every
browser module.

Starting Chromium costs about 0.5-1 s of a browser test on this machine (measured in
tests/README.md); a new context costs a few milliseconds and isolates as well: no
cookie, storage entry or download outlives its test.
"""

import os
from collections.abc import Iterator

import pytest

from .support import TIMEOUT

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


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
