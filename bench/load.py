"""Benchmark 5: the console under load while the simulated runtime commits.

gunicorn (2 gthread workers x 4 threads, whitenoise, DEBUG off) on 127.0.0.1 at a free
port; ``manage.py simulate`` committing beside it; eight client threads (http.client,
keep-alive, loopback only) alternating the Work list and Work pages for a fixed time.
Everything is bounded: the clients stop at their deadline, simulate has a duration,
gunicorn is stopped by its process ID, and a watchdog kills what is left.
"""

from __future__ import annotations

import http.client
import itertools
import os
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import mix, polls
from .config import Sizes
from .proc import MANAGE, PYTHON, ROOT, DataDir, Workspace, child, log
from .report import Section, Target, num, table
from .stats import Spread

GUNICORN = str(Path(PYTHON).parent / "gunicorn")
HOST = "127.0.0.1"  # loopback only
MAX_REQUESTS = 200_000  # per client: a bound even if the deadline logic failed
HEAVY_CLIENTS = 32  # the second client count (the first is Sizes.load_clients)
WARM_UP = 3.0  # seconds of unmeasured requests: each worker thread connects, loads templates
DISCOVER = 20.0  # at most this many seconds looking for run and workflow pages to request
P95_GOAL = 0.5  # issue 22: the 8-client mix's p95 beside simulate, seconds
RSS_GOAL = 150.0  # issue 22: a gunicorn worker's peak RSS under the mix, MB
LOCKED = re.compile(r"database is locked", re.IGNORECASE)


def setup() -> dict[str, Any]:
    """(child) A signed-in session and what the mix requests: Work IDs (newest and
    live ones), a common kind, a Scope with Work and a finished attempt's artifact."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from storage import Tx, WorkQuery, WorkState, view
    from storage.default import default_store

    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pass")
    client = Client()
    client.force_login(user)

    def read(tx: Tx) -> dict[str, Any]:
        newest = tx.query_works(WorkQuery(limit=100))
        finished = tx.query_works(WorkQuery(states=frozenset({WorkState.COMPLETED}), limit=100))
        facets = tx.work_facets(WorkQuery())
        artifact = next(
            (
                reverse("artifact", kwargs={"execution_id": x.id, "artifact_id": x.artifacts[0].id})
                for w in finished
                for x in tx.executions(w.id)
                if x.artifacts
            ),
            "",
        )
        return {
            "works": [w.id for w in newest] + [w.id for w in tx.live_works()[:100]],
            "finished": [w.id for w in finished[:2]],
            "live": [w.id for w in tx.live_works()[:2]],
            "total": tx.count_works(WorkQuery()),
            "kind": max(facets.kind, key=lambda k: facets.kind[k], default=""),
            "scope": _top_scope(tx, facets.scope),
            "artifact": artifact,
        }

    found = view(default_store(), None, read)
    name = settings.SESSION_COOKIE_NAME
    return {
        "cookie": f"{name}={client.cookies[name].value}",
        **found,
        # The settled list's bound: history before the run (ISO, as a URL takes it).
        "until": datetime.now(UTC).isoformat(),
    }


def _top_scope(tx: Any, counts: Mapping[str, int]) -> str:
    """The root of the Scope holding the most Work: its dashboard covers a whole tree
    (the issue's slowest page was such a tree's)."""
    parents = {s.id: s.parent_id for s in tx.scopes()}
    scope = max((s for s in counts if s), key=lambda s: counts[s], default="")
    while parents.get(scope):
        scope = parents[scope]
    return scope


def _free_port() -> int:
    """``BENCH_PORT`` when set (a shared machine's own range), else a free port."""
    if os.environ.get("BENCH_PORT"):
        return int(os.environ["BENCH_PORT"])
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _store_version(data: DataDir) -> int:
    con = sqlite3.connect(f"file:{data.db}?mode=ro", uri=True, timeout=30)
    try:
        value = con.execute("SELECT value FROM conduit_meta WHERE key = 'clock'").fetchone()[0]
        return int(value.partition(" ")[2] or 0)
    finally:
        con.close()


@dataclass
class Client:
    """One client thread walking the mix: (kind, seconds) of each request, its polls'
    (kind of region, status, seconds), its errors. Its polls go through ``tabs``, the
    regions' tabs every client shares (as if each region were open in one browser)."""

    port: int
    cookie: str
    paths: list[tuple[str, str]]
    deadline: float
    watched: dict[str, str]  # region page -> its kind (``polls.regions``)
    tabs: polls.Tabs
    latencies: list[tuple[str, float]] = field(default_factory=list)
    answers: list[tuple[str, int, float]] = field(default_factory=list)  # polls'
    errors: list[str] = field(default_factory=list)
    poll_errors: int = 0

    def get(
        self, conn: http.client.HTTPConnection, path: str, headers: dict[str, str]
    ) -> tuple[int, bytes, str]:
        conn.request("GET", path, headers={"Cookie": self.cookie, **headers})
        response = conn.getresponse()
        body = response.read()
        return response.status, body, response.getheader(polls.HEADER, "")

    def request(self, conn: http.client.HTTPConnection, kind: str, path: str) -> None:
        started = time.perf_counter()
        if kind == mix.POLL:
            url, headers = self.tabs.poll(path)
            status, body, header = self.get(conn, url, headers)
            seconds = time.perf_counter() - started
            self.answers.append((self.watched[path], status, seconds))
            error = self.tabs.answered(path, status, body, header)
            self.poll_errors += bool(error)
        else:
            status, _, _ = self.get(conn, path, {})
            seconds = time.perf_counter() - started
            # A search for a prefix only one ID starts with lands on its page.
            ok = (200, 302) if kind == mix.SEARCH else (200,)
            error = "" if status in ok else f"{path}: HTTP {status}"
        self.latencies.append((kind, seconds))
        if error:
            self.errors.append(error)

    def run(self) -> None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
        for kind, path in itertools.islice(itertools.cycle(self.paths), MAX_REQUESTS):
            if time.monotonic() >= self.deadline:
                break
            try:
                self.request(conn, kind, path)
            except (OSError, http.client.HTTPException) as exc:
                self.errors.append(f"{path}: {type(exc).__name__}: {exc}")
                conn.close()
                conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
        conn.close()


def _drive(
    port: int,
    cookie: str,
    paths: list[tuple[str, str]],
    watched: dict[str, str],
    tabs: polls.Tabs,
    count: int,
    seconds: float,
) -> list[Client]:
    """``count`` client threads for ``seconds``; each starts at another place in the
    schedule, so they do not request the same page at the same moment."""
    end = time.monotonic() + seconds
    step = len(paths) // count
    clients = [
        Client(port, cookie, paths[i * step :] + paths[: i * step], end, watched, tabs)
        for i in range(count)
    ]
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    return clients


def _open_tabs(port: int, cookie: str, watched: dict[str, str]) -> polls.Tabs:
    """Each region's page loaded once, as the tab that then polls it: the mix's polls
    are the polls of tabs already open, not the page loads they began with."""
    tabs = polls.Tabs()
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        for path in watched:
            conn.request("GET", path, headers={"Cookie": cookie})
            response = conn.getresponse()
            error = tabs.open(path, response.status, response.read())
            if error:
                raise RuntimeError(f"a region to poll did not load: {error}")
    finally:
        conn.close()
    return tabs


def _discover(port: int, cookie: str, seconds: float = 20) -> tuple[list[str], list[str]]:
    """Run and workflow pages from their lists, once ``simulate`` has saved some (it
    saves its first graph runs and admits its first routed runs within seconds)."""
    runs: list[str] = []
    workflows: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        try:
            for path, pattern, found in (
                ("/run-records", mix.RUN_LINK, runs),
                ("/routed/workflows", mix.WORKFLOW_LINK, workflows),
            ):
                if not found:
                    conn.request("GET", path, headers={"Cookie": cookie})
                    found += mix.links(pattern, conn.getresponse().read().decode())
        finally:
            conn.close()
        if runs and workflows:
            break
        time.sleep(1.0)
    return runs, workflows


def _wait_up(port: int, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("gunicorn did not answer /healthz")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after the ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Phase:
    """One client count's measured run and the workers' peak RSS after it."""

    clients: int
    seconds: float
    results: list[Client]
    rss: dict[int, float]  # worker PID -> VmHWM, MB
    commit_rate: float  # transactions/s the runtime committed meanwhile
    load: tuple[float, float]  # the machine's 1-minute load average before and after


def run(ws: Workspace, histories: list[DataDir], sizes: Sizes) -> Section:
    """The mix on each history in turn (the full run: the small and the large realistic
    one, as issue 22 asks every page benchmark at both sizes), one block and one set of
    targets per history."""
    section: Section | None = None
    for history in histories:
        part = _run_one(ws, history, sizes, labelled=len(histories) > 1)
        if section is None:
            section = part
        else:
            section.blocks += part.blocks
            section.targets += part.targets
    if section is None:
        raise ValueError("benchmark 5 needs a history")
    return section


def _run_one(ws: Workspace, history: DataDir, sizes: Sizes, labelled: bool) -> Section:
    counts = (sizes.load_clients, HEAVY_CLIENTS)
    log(
        f"benchmark 5: the 12-kind mix at {' and '.join(map(str, counts))} clients, "
        f"{sizes.load_seconds:g} s each, against gunicorn while manage.py simulate commits"
    )
    data = ws.copy_of(history, "load")
    info = child(data, "load.setup")
    port = _free_port()
    logs = data.path / "logs"
    logs.mkdir()
    env = data.env()
    gunicorn = subprocess.Popen(  # noqa: S603 - our own venv's gunicorn, fixed arguments
        [
            GUNICORN,
            "conduit.wsgi",
            "--no-control-socket",
            "-b",
            f"{HOST}:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
        ],
        cwd=ROOT,
        env=env,
        stdout=(logs / "gunicorn.out").open("wb"),
        stderr=(logs / "gunicorn.err").open("wb"),
    )
    simulate: subprocess.Popen[bytes] | None = None
    procs: list[subprocess.Popen[bytes]] = [gunicorn]
    running = WARM_UP + DISCOVER + len(counts) * sizes.load_seconds

    def kill_all() -> None:
        for p in procs:
            if p.poll() is None:
                p.kill()

    watchdog = threading.Timer(180 + 3 * running, kill_all)
    watchdog.start()
    phases: list[Phase] = []
    try:
        _wait_up(port, gunicorn)
        simulate = subprocess.Popen(  # noqa: S603 - our own manage.py, fixed arguments
            [
                PYTHON,
                MANAGE,
                "simulate",
                "--rate",
                str(sizes.sim_rate),
                "--duration",
                str(running + 60),
                "--seed",
                "7",
            ],
            cwd=ROOT,
            env=env,
            stdout=(logs / "simulate.out").open("wb"),
            stderr=(logs / "simulate.err").open("wb"),
        )
        procs.append(simulate)
        # Let the simulator start committing before the clients begin.
        first = _store_version(data)
        deadline = time.monotonic() + 30
        while _store_version(data) == first and time.monotonic() < deadline:
            time.sleep(0.1)
        runs, workflows = _discover(port, info["cookie"], DISCOVER)
        paths = mix.schedule(mix.variants(info, runs, workflows))
        watched = {path: kind for kind, path in polls.regions(info)}
        tabs = _open_tabs(port, info["cookie"], watched)
        # Warm-up, not kept: each worker thread connects and loads its templates.
        warm = _drive(port, info["cookie"], paths, watched, tabs, counts[0], WARM_UP)
        for count in counts:
            v0, t0, before = _store_version(data), time.monotonic(), os.getloadavg()[0]
            results = _drive(port, info["cookie"], paths, watched, tabs, count, sizes.load_seconds)
            v1, t1 = _store_version(data), time.monotonic()
            rss = {pid: _peak_rss_mb(pid) for pid in _children(gunicorn.pid)}
            rate, load = (v1 - v0) / (t1 - t0), (before, os.getloadavg()[0])
            phases.append(Phase(count, sizes.load_seconds, results, rss, rate, load))
    finally:
        watchdog.cancel()
        if simulate is not None:
            _stop(simulate)
        _stop(gunicorn)
    texts = {p.name: p.read_text(errors="replace") for p in sorted(logs.iterdir())}
    locked = {name: len(LOCKED.findall(text)) for name, text in texts.items()}
    tracebacks = sum(text.count("Traceback") for text in texts.values())
    summary = next(
        (line for line in texts["simulate.out"].splitlines() if line.startswith("simulate:")), ""
    )
    ws.discard(data)
    found = {"runs": len(runs), "workflows": len(workflows), "artifact": bool(info["artifact"])}
    return _section(
        sizes, info["total"], phases, warm, locked, tracebacks, summary, found, labelled
    )


def _percentiles(values: list[float]) -> list[str]:
    spread = Spread.of(values)
    return [
        f"{len(values):,}",
        *(f"{num(spread.quantile(q) * 1000)} ms" for q in (0.5, 0.95, 0.99)),
        f"{num(spread.max * 1000)} ms",
    ]


def _phase_block(phase: Phase) -> str:
    rows = []
    for kind in [k for k, _ in mix.KINDS] + [None]:
        values = [s for c in phase.results for k, s in c.latencies if kind is None or k == kind]
        label = kind or "**all**"
        rows.append([label, *(_percentiles(values) if values else ["0", *["n/a"] * 4])])
    total = sum(len(c.latencies) for c in phase.results)
    errors = [e for c in phase.results for e in c.errors]
    return (
        f"{phase.clients} clients (1-minute load average {phase.load[0]:.1f} before, "
        f"{phase.load[1]:.1f} after):\n\n"
        + table(["Kind", "Requests", "p50", "p95", "p99", "Max"], rows)
        + f"\n\n- Throughput: {num(total / phase.seconds)} requests/s\n"
        f"- Errors (failed requests or non-200 answers; 204 for polls): {len(errors)}"
        + (f"; first: `{errors[0]}`" if errors else "")
        + f"\n- Runtime commit rate meanwhile: {num(phase.commit_rate)} transactions/s\n"
        "- Peak RSS (VmHWM) per gunicorn worker so far: "
        + ", ".join(f"{num(v)} MB" for v in sorted(phase.rss.values()))
    )


def _section(
    sizes: Sizes,
    works: int,
    phases: list[Phase],
    warm: list[Client],
    locked: dict[str, int],
    tracebacks: int,
    summary: str,
    found: Mapping[str, object],
    labelled: bool,
) -> Section:
    section = Section(
        "5",
        "Under load",
        (
            "Each history in turn, one block each below. "
            if labelled
            else f"{works:,} Work of history. "
        )
        + f"gunicorn (`conduit.wsgi`, 2 gthread workers x 4 threads, "
        f"whitenoise, DEBUG off) on 127.0.0.1 at a free port; `manage.py simulate --rate "
        f"{sizes.sim_rate:g}` committing beside it; client threads (http.client, keep-alive, "
        "loopback only), signed in, each walking the console's 12-kind mix (`bench/mix.py`: "
        + ", ".join(f"{kind} {weight}" for kind, weight in mix.KINDS)
        + " in every 25 requests) without pause, at "
        + " and ".join(str(p.clients) for p in phases)
        + f" clients for {sizes.load_seconds:g} s each, after an unmeasured warm-up of "
        f"{WARM_UP:g} s; one gunicorn and one simulate for both. Found for the mix: "
        f"{found['runs']} run pages, {found['workflows']} workflow pages, "
        f"{'an' if found['artifact'] else 'no'} artifact.",
    )
    if labelled:
        section.add(f"### {works:,} Work of history")
    for phase in phases:
        section.add(_phase_block(phase))
    section.add(
        '- "database is locked" in the logs: '
        + ", ".join(f"{name} {n}" for name, n in locked.items())
        + f"; tracebacks in the logs: {tracebacks}\n"
        f"- Simulator: `{summary or 'no summary line'}`"
    )
    every = [p for phase in phases for c in phase.results for p in c.answers]
    poll_errors = sum(c.poll_errors for phase in phases for c in phase.results)
    at = f" at {works:,} Work" if labelled else ""
    polls.report(section, every, poll_errors, at)
    # Errors of the warm-up count too: a failed request is a failure whenever it happens.
    errors = [e for c in warm for e in c.errors] + [
        e for phase in phases for c in phase.results for e in c.errors
    ]
    total = sum(len(c.latencies) for phase in phases for c in phase.results)
    first = phases[0] if phases else None
    p95 = (
        Spread.of([s for c in first.results for _, s in c.latencies]).quantile(0.95)
        if first and any(c.latencies for c in first.results)
        else None
    )
    rss = max((v for phase in phases for v in phase.rss.values()), default=None)
    section.targets += [
        Target(
            f"{first.clients if first else '?'}-client mix p95 beside simulate{at}",
            "n/a" if p95 is None else f"{num(p95 * 1000)} ms",
            f"<= {P95_GOAL * 1000:g} ms",
            None if p95 is None else p95 <= P95_GOAL,
        ),
        Target(
            f"Peak RSS per gunicorn worker under the mix{at}",
            "n/a" if rss is None else f"{num(rss)} MB",
            f"<= {RSS_GOAL:g} MB",
            None if rss is None else rss <= RSS_GOAL,
        ),
        Target(f"Errors under load{at}", str(len(errors)), "0", not errors and total > 0),
        Target(
            f'"database is locked" under load{at}',
            str(sum(locked.values())),
            "0",
            not any(locked.values()),
        ),
    ]
    return section
