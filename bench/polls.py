"""Benchmark 5's poll phase: how often a live region's poll answers 204 while the
simulated runtime commits, per kind of region.

Each poll client acts as htmx and console.js do: it loads a region's page once, then
polls the region's ``hx-get`` URL (which carries the stamp it was rendered with) with
``HX-Request`` and the stamp it last saw in ``X-Console-Stamp`` (a 200 brings the new
region, its URL and stamp; a 204 the current stamp in the header). A server that does
not read the header (before region stamps) answers from the URL's stamp, as it did. The regions
are chosen by what the runtime does to them: a filtered list of settled history and a
finished Work's page (nothing the runtime commits touches them: the 204 goal is stated
for these), and for contrast a list and Work pages the runtime keeps changing, and the
dashboard (whose series move with every Event).
"""

from __future__ import annotations

import html
import http.client
import re
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import quote

from .report import Section, Target, num, table
from .stats import Spread

HOST = "127.0.0.1"
STAMP = re.compile(rb'data-stamp="([^"]+)"')
POLL_URL = re.compile(rb'hx-get="([^"]*stamp=[^"]*)"')
HEADER = "X-Console-Stamp"
GOAL = 0.90  # issue 22: at least 90% 204s for untouched regions
UNTOUCHED = ("settled list", "finished Work")
POLLS_PER_REGION = 10_000  # a bound even if the deadline logic failed


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
class Poller:
    """One client: its regions' stamps, each poll's (kind, status, seconds), errors."""

    port: int
    cookie: str
    watched: list[tuple[str, str]]
    seconds: float  # of polling, counted from when the pages are loaded
    every: float
    polls: list[tuple[str, int, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def get(
        self, conn: http.client.HTTPConnection, path: str, headers: dict[str, str]
    ) -> tuple[int, bytes, str]:
        conn.request("GET", path, headers={"Cookie": self.cookie, **headers})
        response = conn.getresponse()
        body = response.read()
        return response.status, body, response.getheader(HEADER, "")

    def run(self) -> None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
        # Per region: the stamp, and the poll URL as htmx has it (the hx-get of the
        # region last swapped in, which carries the stamp it was rendered with).
        stamps: dict[str, str] = {}
        urls: dict[str, str] = {}
        try:
            for _, path in self.watched:
                status, body, _ = self.get(conn, path, {})
                found, url = STAMP.search(body), POLL_URL.search(body)
                if status != 200 or not found or not url:
                    self.errors.append(f"{path}: HTTP {status} without a stamp")
                    continue
                stamps[path] = found.group(1).decode()
                urls[path] = html.unescape(url.group(1).decode())
            deadline = time.monotonic() + self.seconds
            for _ in range(POLLS_PER_REGION):
                round_start = time.monotonic()
                if round_start >= deadline:
                    break
                for kind, path in self.watched:
                    if path not in stamps:
                        continue
                    headers = {"HX-Request": "true", HEADER: stamps[path]}
                    started = time.perf_counter()
                    status, body, header = self.get(conn, urls[path], headers)
                    self.polls.append((kind, status, time.perf_counter() - started))
                    found = STAMP.search(body) if status == 200 else None
                    url = POLL_URL.search(body) if status == 200 else None
                    if url:
                        urls[path] = html.unescape(url.group(1).decode())
                    if found:
                        stamps[path] = found.group(1).decode()
                    elif status == 204 and header:
                        stamps[path] = header
                    elif status not in (200, 204):
                        self.errors.append(f"{path}: HTTP {status}")
                time.sleep(max(0.0, self.every - (time.monotonic() - round_start)))
        except (OSError, http.client.HTTPException) as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()


def drive(
    port: int, cookie: str, info: dict[str, object], count: int, seconds: float, every: float
) -> list[Poller]:
    """``count`` poll clients for ``seconds``, each watching every region once per
    ``every`` seconds (as an open tab does, faster so a short run samples enough)."""
    watched = regions(info)
    pollers = [Poller(port, cookie, watched, seconds, every) for _ in range(count)]
    threads = [threading.Thread(target=p.run, daemon=True) for p in pollers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 180)  # the first loads come before the polling seconds
    return pollers


def report(section: Section, pollers: list[Poller], every: float) -> None:
    """The 204 share and latency per kind of region, and the target for untouched ones."""
    polls = [p for c in pollers for p in c.polls]
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
        f"Polls ({len(pollers)} clients, each region every {every:g} s, as console.js "
        "polls: the stamp in `X-Console-Stamp`, renewed by every 200 and 204):\n\n"
        + table(["Region", "Polls", "204 share", "Median 204", "Median 200"], rows)
    )
    errors = [e for c in pollers for e in c.errors]
    if errors:
        section.add(f"- Poll errors: {len(errors)}; first: `{errors[0]}`")
    for kind in UNTOUCHED:
        share = shares.get(kind)
        section.targets.append(
            Target(
                f"Poll 204 share, {kind}",
                "n/a" if share is None else f"{num(share * 100)}%",
                f">= {GOAL:.0%}",
                None if share is None else share >= GOAL and not errors,
            )
        )
