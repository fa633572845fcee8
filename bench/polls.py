"""Benchmark 5's polls: how often a live region's poll answers 204 while the simulated
runtime commits, per kind of region.

A client's poll acts as htmx and console.js do: the tab loads a region's page once,
then polls the region's ``hx-get`` URL (which carries the stamp it was rendered with)
with ``HX-Request`` and the stamp it last saw in ``X-Console-Stamp`` (a 200 brings the
new region, its URL and stamp; a 204 the current stamp in the header). A server that does
not read the header (before region stamps) answers from the URL's stamp, as it did. The regions
are chosen by what the runtime does to them: a filtered list of settled history and a
finished Work's page (nothing the runtime commits touches them: the 204 goal is stated
for these), and for contrast a list and Work pages the runtime keeps changing, and the
dashboard (whose series move with every Event).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from .report import Section, Target, num, table
from .stats import Spread

STAMP = re.compile(rb'data-stamp="([^"]+)"')
POLL_URL = re.compile(rb'hx-get="([^"]*stamp=[^"]*)"')
HEADER = "X-Console-Stamp"
GOAL = 0.90  # issue 22: at least 90% 204s for untouched regions
UNTOUCHED = ("settled list", "finished Work")


def regions(info: dict[str, object]) -> list[tuple[str, str]]:
    """(kind, path) of each region a poll client watches."""
    until = quote(str(info["until"]))
    out = [
        ("settled list", f"/?state=completed&until={until}"),
        ("running list", "/?state=running"),
        ("dashboard", "/dashboard?window=1h"),
    ]
    out += [("finished Work", f"/works/{w}") for w in info["finished"]]  # type: ignore[attr-defined]
    out += [("live Work", f"/works/{w}") for w in info["live"]]  # type: ignore[attr-defined]
    return out


@dataclass
class Tabs:
    """One client's open tabs: per region page, the stamp it last saw and its poll URL
    as htmx has it (the ``hx-get`` of the region last swapped in, which carries the
    stamp it was rendered with)."""

    stamps: dict[str, str] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)

    def opened(self, path: str) -> bool:
        return path in self.urls

    def open(self, path: str, status: int, body: bytes) -> str:
        """Take a region page's first load; an error message if it cannot be polled."""
        found, url = STAMP.search(body), POLL_URL.search(body)
        if status != 200 or not found or not url:
            return f"{path}: HTTP {status} without a stamp"
        self.stamps[path] = found.group(1).decode()
        self.urls[path] = html.unescape(url.group(1).decode())
        return ""

    def poll(self, path: str) -> tuple[str, dict[str, str]]:
        """The URL and headers of the region's next poll."""
        return self.urls[path], {"HX-Request": "true", HEADER: self.stamps[path]}

    def answered(self, path: str, status: int, body: bytes, header: str) -> str:
        """Take a poll's answer (a 200 brings the new region, its URL and stamp; a 204
        the current stamp in the header); an error message for any other status."""
        found = STAMP.search(body) if status == 200 else None
        url = POLL_URL.search(body) if status == 200 else None
        if url:
            self.urls[path] = html.unescape(url.group(1).decode())
        if found:
            self.stamps[path] = found.group(1).decode()
        elif status == 204 and header:
            self.stamps[path] = header
        elif status not in (200, 204):
            return f"{path}: HTTP {status}"
        return ""


def report(
    section: Section, polls: list[tuple[str, int, float]], errors: int, at: str = ""
) -> None:
    """The 204 share and latency per kind of region, and the target for untouched ones.
    ``polls``: (kind of region, status, seconds) of each poll; ``errors``: failed polls;
    ``at``: which history, in the targets' names, when the benchmark runs on several."""
    rows = []
    shares: dict[str, float] = {}
    for kind in dict.fromkeys(k for k, _, _ in polls):
        mine = [(s, t) for k, s, t in polls if k == kind]
        cheap = [t for s, t in mine if s == 204]
        full = [t for s, t in mine if s == 200]
        shares[kind] = len(cheap) / len(mine)
        rows.append(
            [
                kind,
                f"{len(mine):,}",
                f"{num(shares[kind] * 100)}%",
                f"{num(Spread.of(cheap).median * 1000)} ms" if cheap else "n/a",
                f"{num(Spread.of(full).median * 1000)} ms" if full else "n/a",
            ]
        )
    section.add(
        "The mix's polls, per kind of region (both client counts; the stamp in "
        "`X-Console-Stamp`, renewed by every 200 and 204):\n\n"
        + table(["Region", "Polls", "204 share", "Median 204", "Median 200"], rows)
    )
    for kind in UNTOUCHED:
        share = shares.get(kind)
        section.targets.append(
            Target(
                f"Poll 204 share, {kind}{at}",
                "n/a" if share is None else f"{num(share * 100)}%",
                f">= {GOAL:.0%}",
                None if share is None else share >= GOAL and not errors,
            )
        )
