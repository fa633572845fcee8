"""The deploy suite: the topology of docs/deploy.md stood up once per session
(``topology.py``), and pages in fresh contexts of the session's one Chromium
(``browser`` below, tests/support/browser.py).

It needs PostgreSQL's server binaries, nginx, openssl and Debian's Chromium; ``make
test`` runs it in its PostgreSQL pass (the topology starts a cluster of its own, so a
test may restart it without touching the run's test database). The suite never
touches pytest-django's test database.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator

import pytest

from tests.deploy.topology import OPERATOR, Topology, missing_tools
from tests.support.browser import chromium

TIMEOUT = 20_000  # ms


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.deploy)
            item.add_marker(pytest.mark.xdist_group("deploy"))  # one topology, one worker


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Debian's Chromium for the deploy suite's pages, launched once for the package
    (it sets DJANGO_ALLOW_ASYNC_UNSAFE while it runs: pytest-django's own fixtures
    refuse inside Playwright's event loop without it)."""
    with chromium(TIMEOUT) as launched:
        yield launched


@pytest.fixture(scope="session")
def topology(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    missing = missing_tools()
    if missing:
        pytest.fail(
            f"the deploy suite needs {', '.join(missing)}: apt-get install -y nginx openssl "
            "postgresql chromium-headless-shell (or deselect it locally with -m 'not deploy')"
        )
    top = Topology(tmp_path_factory.mktemp("deploy"))
    # A run stopped by SIGTERM (a CI timeout) tears the topology down as Ctrl-C does:
    # its processes are in their own process groups and would outlive the run.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        top.start()  # a process that does not come up: the error holds every log's end
        yield top
    finally:
        top.stop()
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


_MEASURED: dict[str, str] = {}


@pytest.fixture(scope="session")
def measured() -> dict[str, str]:
    """What the suite measured (fault timings), printed at the end of the run."""
    return _MEASURED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _MEASURED:
        terminalreporter.section("deploy: measured")
        for name, value in _MEASURED.items():
            terminalreporter.write_line(f"{name}: {value}")


@pytest.fixture
def new_page(browser, topology: Topology) -> Iterator[Callable[..., object]]:
    """Pages in fresh browser contexts (no cookies), at 1440x900 unless told; each
    accepts the throwaway certificate. A page error (a script failing, a CSP refusal)
    fails the test."""
    contexts = []
    errors: list[str] = []

    def make(width: int = 1440, height: int = 900) -> object:
        context = browser.new_context(
            viewport={"width": width, "height": height}, ignore_https_errors=True
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        return page

    yield make
    for context in contexts:
        context.close()
    assert errors == []


@pytest.fixture
def sign_in(topology: Topology) -> Callable[..., None]:
    """Sign the operator in on ``page``, through nginx or through one host's listener."""

    def go(page, host: str = "", path: str = "/") -> None:
        page.goto(topology.url(path, host=host))
        page.fill("input[name=username]", OPERATOR)
        page.fill("input[name=password]", topology.password)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)

    return go
