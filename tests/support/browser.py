"""Debian's Chromium (its headless shell) under Playwright, for the suites that drive a
browser (the console's, tests/console/browser/, and the deploy suite's, tests/deploy/):
each conftest opens ``chromium()`` in a package-scoped ``browser`` fixture, so Chromium
starts once for the package's tests and stops after them.

Playwright's sync API keeps an event loop running in the test thread from its start
to its stop, and Django refuses database calls (pytest-django's fixtures among them)
in a thread with a running loop unless DJANGO_ALLOW_ASYNC_UNSAFE is set. So the flag
is set here, for exactly as long as Playwright runs: not for the tests that follow, and
not in the environment their child processes inherit (``manage.py check --deploy``
refuses it). Playwright allows one running instance per thread: the packages run one
after the other, each stopping its own before the next starts.

Measured on this machine: Playwright and Chromium started per test cost about 1.5 s,
a new context on a running browser 0.2 s.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# Chromium's headless shell (Debian's chromium-headless-shell, built from the same source
# package and revision as /usr/bin/chromium: the same Blink, V8 and layout). It is the
# build Playwright itself runs for headless Chromium: no browser UI layers, no GPU
# process emulation. Measured on this 2-core machine, the console's 68 browser tests on
# SQLite, two xdist workers, nothing else running: the whole machine's CPU (/proc/stat)
# 482 s with the shell against 700 s with the full browser, wall 309 s against 393 s
# (issue 29). CONDUIT_TEST_CHROMIUM=/usr/bin/chromium runs the same tests in the full
# browser.
CHROMIUM = Path(os.environ.get("CONDUIT_TEST_CHROMIUM", "/usr/bin/chromium-headless-shell"))
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@contextmanager
def chromium(timeout: int) -> Iterator[object]:
    """A launched Chromium, with DJANGO_ALLOW_ASYNC_UNSAFE set while it runs, and
    Playwright's ``expect()`` waiting up to ``timeout`` ms, as long as the suite's
    pages wait for an element (``page.set_default_timeout``). Its own 5 s default is
    shorter than a loaded CI machine can take to answer: with both engines' suites on 2
    cores, a bulk action's first progress poll came after 5 s and failed a journey
    whose every page step would have waited 20 s."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: apt-get install -y chromium-headless-shell "
            "(or deselect these tests locally with -m 'not browser')"
        )
    from playwright.sync_api import expect, sync_playwright

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        expect.set_options(timeout=timeout)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
                try:
                    yield browser
                finally:
                    browser.close()
        finally:
            expect.set_options(timeout=None)  # Playwright's own default again
