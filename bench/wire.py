"""Benchmark 10: what open tabs' polls cost on the wire, compressed and not.

gunicorn as in benchmark 5 with ``manage.py simulate`` committing beside it. Each region
of benchmark 5's polls (``polls.regions``) is open in two tabs: one asks as Chromium does
(``Accept-Encoding: gzip, deflate, br, zstd``), one asks for nothing, and gets the bytes
every browser got before the console compressed HTML (the same bodies; the only header
the middleware adds is ``Vary: Accept-Encoding``, counted). Every tab polls at the
console's default interval (``console.polling.DEFAULT``, 5 s), the two tabs of a region
one after the other, so they see the same commits. Counted: each answer's status line,
headers and body as they came off the socket (http.client does not decode them).
"""

from __future__ import annotations

import gzip
import http.client
import subprocess
import threading
import time
from dataclasses import dataclass, field

from . import polls
from .config import Sizes
from .load import GUNICORN, HOST, _free_port, _stop, _store_version, _wait_up
from .proc import MANAGE, PYTHON, ROOT, DataDir, Workspace, child, log
from .report import Section, Target, num, table

POLL_EVERY = 5.0  # seconds: console.polling.DEFAULT, what a tab does unless told otherwise
WORKERS = ("--workers", "2", "--threads", "4")  # as benchmark 5 and `make run`
ENCODINGS = {"gzip": "gzip, deflate, br, zstd", "identity": ""}  # Chromium's, and none


@dataclass
class Tab:
    """One open tab of a region, asking with one Accept-Encoding."""

    kind: str
    path: str
    encoding: str
    tabs: polls.Tabs = field(default_factory=polls.Tabs)
    answers: list[tuple[int, int]] = field(default_factory=list)  # (status, bytes)
    errors: list[str] = field(default_factory=list)

    def headers(self) -> dict[str, str]:
        accept = ENCODINGS[self.encoding]
        return {"Accept-Encoding": accept} if accept else {}


def _get(
    conn: http.client.HTTPConnection, path: str, headers: dict[str, str]
) -> tuple[int, bytes, str, int]:
    """(status, decoded body, stamp header, bytes on the wire) of one GET."""
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    wire = len(f"HTTP/1.1 {response.status} {response.reason}\r\n") + 2 + len(raw)
    wire += sum(len(name) + len(value) + 4 for name, value in response.getheaders())
    body = gzip.decompress(raw) if response.getheader("Content-Encoding") == "gzip" else raw
    return response.status, body, response.getheader(polls.HEADER, ""), wire


def _poll_for(port: int, cookie: str, tabs: list[Tab], seconds: float, every: float) -> None:
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        for tab in tabs:
            status, body, _, _ = _get(conn, tab.path, {"Cookie": cookie, **tab.headers()})
            error = tab.tabs.open(tab.path, status, body)
            if error:
                raise RuntimeError(f"a region to poll did not load: {error}")
        end, rounds = time.monotonic() + seconds, 0
        while (now := time.monotonic()) < end:
            # A region's two tabs take turns at polling first: a commit landing between
            # them must not always fall to the same one.
            rounds += 1
            # gunicorn closes a connection idle for 2 s (its keep-alive): a browser
            # polling every 5 s opens a new one each time too.
            conn.close()
            conn = http.client.HTTPConnection(HOST, port, timeout=60)
            for tab in tabs if rounds % 2 else reversed(tabs):
                url, headers = tab.tabs.poll(tab.path)
                status, body, header, wire = _get(
                    conn, url, {"Cookie": cookie, **headers, **tab.headers()}
                )
                tab.answers.append((status, wire))
                error = tab.tabs.answered(tab.path, status, body, header)
                if error:
                    tab.errors.append(error)
            time.sleep(max(0.0, now + every - time.monotonic()))
    finally:
        conn.close()


def run(ws: Workspace, history: DataDir, sizes: Sizes) -> Section:
    every = min(POLL_EVERY, sizes.wire_seconds / 4)
    log(f"benchmark 10: polls on the wire, every {every:g} s for {sizes.wire_seconds:g} s")
    data = ws.copy_of(history, "wire")
    info = child(data, "load.setup")
    port = _free_port()
    logs = data.path / "logs"
    logs.mkdir()
    env = data.env()
    gunicorn = subprocess.Popen(  # noqa: S603 - our own venv's gunicorn, fixed arguments
        [GUNICORN, "conduit.wsgi", "--no-control-socket", "-b", f"{HOST}:{port}", *WORKERS],
        cwd=ROOT,
        env=env,
        stdout=(logs / "gunicorn.out").open("wb"),
        stderr=(logs / "gunicorn.err").open("wb"),
    )
    procs = [gunicorn]
    watchdog = threading.Timer(240 + 2 * sizes.wire_seconds, lambda: [p.kill() for p in procs])
    watchdog.start()
    tabs = [
        Tab(kind, path, encoding) for kind, path in polls.regions(info) for encoding in ENCODINGS
    ]
    rate = 0.0
    try:
        _wait_up(port, gunicorn)
        until = ("--duration", str(sizes.wire_seconds + 90))
        simulate = subprocess.Popen(  # noqa: S603 - our own manage.py, fixed arguments
            [PYTHON, MANAGE, "simulate", "--rate", str(sizes.sim_rate), *until, "--seed", "7"],
            cwd=ROOT,
            env=env,
            stdout=(logs / "simulate.out").open("wb"),
            stderr=(logs / "simulate.err").open("wb"),
        )
        procs.append(simulate)
        first, deadline = _store_version(data), time.monotonic() + 30
        while _store_version(data) == first and time.monotonic() < deadline:
            time.sleep(0.1)
        v0, t0 = _store_version(data), time.monotonic()
        _poll_for(port, info["cookie"], tabs, sizes.wire_seconds, every)
        rate = (_store_version(data) - v0) / (time.monotonic() - t0)
    finally:
        watchdog.cancel()
        for proc in reversed(procs):
            _stop(proc)
    ws.discard(data)
    return _section(sizes, info["total"], tabs, every, rate)


def _per_minute(tabs: list[Tab], seconds: float) -> float:
    """Bytes a minute per tab, over these tabs."""
    return sum(w for t in tabs for _, w in t.answers) / len(tabs) / seconds * 60


def _section(sizes: Sizes, works: int, tabs: list[Tab], every: float, rate: float) -> Section:
    section = Section(
        "10",
        "Polls on the wire, compressed and not",
        f"{works:,} Work of history; gunicorn (2 gthread workers x 4 threads, DEBUG off) "
        f"with `manage.py simulate --rate {sizes.sim_rate:g}` committing beside it "
        f"({num(rate)} transactions/s meanwhile). Each region of benchmark 5's polls is "
        "open in two tabs, one asking as Chromium does (`Accept-Encoding: gzip, deflate, "
        "br, zstd`) and one asking for nothing, which gets what every browser got before "
        "HTML was compressed; every tab polls with the stamp it last saw, every "
        f"{every:g} s ("
        + ("the console's default interval" if every == POLL_EVERY else "shortened to fit")
        + f") for {sizes.wire_seconds:g} s, the two tabs of a region back to back, "
        "taking turns at going first. Bytes are the answers' status lines, headers "
        "and bodies as sent (`bench/wire.py`).",
    )
    rows = []
    kinds = list(dict.fromkeys(t.kind for t in tabs))
    for kind in kinds:
        mine = {e: [t for t in tabs if t.kind == kind and t.encoding == e] for e in ENCODINGS}
        polled = [s for t in mine["gzip"] for s, _ in t.answers]
        plain = _per_minute(mine["identity"], sizes.wire_seconds)
        packed = _per_minute(mine["gzip"], sizes.wire_seconds)
        rows.append(
            [
                kind,
                f"{len(polled):,}",
                f"{num(100 * polled.count(204) / max(1, len(polled)))}%",
                f"{num(plain / 1000)} kB",
                f"{num(packed / 1000)} kB",
                f"{num(packed / plain * 100) if plain else 'n/a'}%",
            ]
        )
    section.add(
        "Bytes a minute per open tab, by kind of region (averaged over its tabs):\n\n"
        + table(
            ["Region", "Polls (gzip tabs)", "204 share", "Not compressed", "gzip", "gzip/plain"],
            rows,
        )
    )
    errors = [e for t in tabs for e in t.errors]
    lists = [t for t in tabs if t.kind == "running list"]
    plain = _per_minute([t for t in lists if t.encoding == "identity"], sizes.wire_seconds)
    packed = _per_minute([t for t in lists if t.encoding == "gzip"], sizes.wire_seconds)
    section.add(f"- Poll errors: {len(errors)}" + (f"; first: `{errors[0]}`" if errors else ""))
    section.targets.append(
        Target(
            "Polls' bytes a minute, an open running Work list (not compressed -> gzip)",
            f"{num(plain / 1000)} kB -> {num(packed / 1000)} kB",
            "smaller",
            packed < plain and not errors,
        )
    )
    return section
