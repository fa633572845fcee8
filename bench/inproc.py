"""Pages asked in-process (``django.test.Client``), as benchmarks 3, 7, 9 and 11 time
them: a GET that must answer 200, or the benchmark stops and names the page."""

from __future__ import annotations

from typing import Any


def get_ok(client: Any, url: str) -> bytes:
    """``client``'s GET of ``url``, its body; ``RuntimeError`` unless it answers 200."""
    response = client.get(url)
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code}")
    return bytes(response.content)
