"""What the browser tests share besides fixtures: where Chromium is, how it starts, how
long a step may take, and signing in as alice (the conftest's persona)."""

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TIMEOUT = 15_000  # ms


def sign_in(page, live_server, next_path: str = "/") -> None:
    page.goto(f"{live_server.url}{next_path}")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "password")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
