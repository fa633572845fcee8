"""What the browser tests share besides fixtures: where Chromium is, how it starts, how
long a step may take, and signing in as alice (the conftest's persona)."""

from tests.support.browser import ARGS, CHROMIUM

__all__ = ["ARGS", "CHROMIUM", "TIMEOUT", "sign_in"]

TIMEOUT = 15_000  # ms


def sign_in(page, live_server, next_path: str = "/") -> None:
    page.goto(f"{live_server.url}{next_path}")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "password")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
