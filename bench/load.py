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
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import polls
from .config import Sizes
from .proc import MANAGE, PYTHON, ROOT, DataDir, Workspace, child, log
from .report import Section, Target, num, table
from .stats import Spread

GUNICORN = str(Path(PYTHON).parent / "gunicorn")
HOST = "127.0.0.1"  # loopback only
MAX_REQUESTS = 200_000  # per client: a bound even if the deadline logic failed
POLL_EVERY = 1.0  # seconds between one poll client's rounds of its regions
POLL_ROUNDS = 3  # the poll phase lasts this many times the load phase: enough polls
LOCKED = re.compile(r"database is locked", re.IGNORECASE)


def setup() -> dict[str, Any]:
    """(child) A signed-in session and Work IDs to request (newest and live ones)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from storage import WorkQuery, WorkState, view
    from storage.default import default_store

    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pass")
    client = Client()
    client.force_login(user)
    works, finished, live, total = view(
        default_store(),
        None,
        lambda tx: (
            [w.id for w in tx.query_works(WorkQuery(limit=100))]
            + [w.id for w in tx.live_works()[:100]],
            [w.id for w in tx.query_works(WorkQuery(states=(WorkState.COMPLETED,), limit=2))],
            [w.id for w in tx.live_works()[:2]],
            tx.count_works(WorkQuery()),
        ),
    )
    name = settings.SESSION_COOKIE_NAME
    return {
        "cookie": f"{name}={client.cookies[name].value}",
        "works": works,
        "finished": finished,
        "live": live,
        "total": total,
        # The settled list's bound: history before the run (ISO, as a URL takes it).
        "until": datetime.now(UTC).isoformat(),
    }


def _free_port() -> int:
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
    """One client thread's requests: (kind, seconds) of each, and its errors."""

    port: int
    cookie: str
    paths: list[tuple[str, str]]
    deadline: float
    latencies: list[tuple[str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def run(self) -> None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
        for kind, path in itertools.islice(itertools.cycle(self.paths), MAX_REQUESTS):
            if time.monotonic() >= self.deadline:
                break
            started = time.perf_counter()
            try:
                conn.request("GET", path, headers={"Cookie": self.cookie})
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as exc:
                self.errors.append(f"{path}: {type(exc).__name__}: {exc}")
                conn.close()
                conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
                continue
            self.latencies.append((kind, time.perf_counter() - started))
            if status != 200:
                self.errors.append(f"{path}: HTTP {status}")
        conn.close()


def _drive(
    port: int, cookie: str, paths: list[tuple[str, str]], count: int, seconds: float
) -> list[Client]:
    """``count`` client threads for ``seconds``; each starts at another place in the
    list, so they do not request the same page at the same moment."""
    end = time.monotonic() + seconds
    clients = [Client(port, cookie, paths[i * 7 :] + paths[: i * 7], end) for i in range(count)]
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    return clients


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


def run(ws: Workspace, small: DataDir, sizes: Sizes) -> Section:
    log(
        f"benchmark 5: {sizes.load_clients} clients for {sizes.load_seconds:g} s against "
        "gunicorn while manage.py simulate commits"
    )
    data = ws.copy_of(small, "load")
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
    watchdog = threading.Timer(
        180 + 3 * sizes.load_seconds * (1 + POLL_ROUNDS),
        lambda: [p.kill() for p in procs if p.poll() is None],
    )
    watchdog.start()
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
                str(sizes.load_seconds * (1 + POLL_ROUNDS) + 60),
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
        lists = [("list", "/"), ("list", "/?state=running")]
        ordered: list[tuple[str, str]] = []
        for i, work_id in enumerate(info["works"]):
            ordered += [lists[i % 2], ("work", f"/works/{work_id}")]
        # Warm-up, not kept: each worker thread connects and loads its templates.
        warm = _drive(
            port, info["cookie"], ordered, sizes.load_clients, min(3.0, sizes.load_seconds / 3)
        )
        v0, t0 = _store_version(data), time.monotonic()
        clients = _drive(port, info["cookie"], ordered, sizes.load_clients, sizes.load_seconds)
        v1, t1 = _store_version(data), time.monotonic()
        # A quarter of the clients poll, for longer: an open tab per client would only
        # queue them, and a short phase would sample a few polls per region.
        pollers = polls.drive(
            port,
            info["cookie"],
            info,
            max(1, sizes.load_clients // 4),
            POLL_ROUNDS * sizes.load_seconds,
            POLL_EVERY,
        )
        workers = _children(gunicorn.pid)
        rss = {pid: _peak_rss_mb(pid) for pid in workers}
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
    rate = (v1 - v0) / (t1 - t0)
    section = _section(sizes, info["total"], clients, warm, rss, locked, tracebacks, summary, rate)
    polls.report(section, pollers, POLL_EVERY)
    return section


def _section(
    sizes: Sizes,
    works: int,
    clients: list[Client],
    warm: list[Client],
    rss: dict[int, float],
    locked: dict[str, int],
    tracebacks: int,
    summary: str,
    commit_rate: float,
) -> Section:
    # Errors of the warm-up count too: a failed request is a failure whenever it happens.
    errors = [e for c in warm + clients for e in c.errors]
    section = Section(
        "5",
        "Under load",
        f"{works:,} Work of history. gunicorn (`conduit.wsgi`, 2 gthread workers x 4 threads, "
        f"whitenoise, DEBUG off) on 127.0.0.1 at a free port; `manage.py simulate --rate "
        f"{sizes.sim_rate:g}` committing beside it; {sizes.load_clients} client threads "
        "(http.client, keep-alive, loopback only), signed in, alternating the Work list "
        f"(`/`, `/?state=running`) and Work pages (newest and live Work) for "
        f"{sizes.load_seconds:g} s, after an unmeasured warm-up of "
        f"{min(3.0, sizes.load_seconds / 3):g} s.",
    )
    rows = []
    for kind, label in (("list", "Work list"), ("work", "Work page"), (None, "all")):
        values = [s for c in clients for k, s in c.latencies if kind is None or k == kind]
        if not values:
            rows.append([label, "0", "n/a", "n/a", "n/a"])
            continue
        spread = Spread.of(values)
        rows.append(
            [
                label,
                f"{len(values):,}",
                f"{num(spread.median * 1000)} ms",
                f"{num(spread.quantile(0.99) * 1000)} ms",
                f"{num(spread.min * 1000)}-{num(spread.max * 1000)} ms",
            ]
        )
    total = sum(len(c.latencies) for c in clients)
    section.add(table(["Requests", "Count", "Median", "p99", "Min-max"], rows))
    per_client = Spread.of([len(c.latencies) / sizes.load_seconds for c in clients])
    section.add(
        f"- Throughput: {num(total / sizes.load_seconds)} requests/s in total; per client "
        f"{num(per_client.median)} requests/s ({num(per_client.min)}-{num(per_client.max)})\n"
        f"- Errors (failed requests or non-200 answers, warm-up included): {len(errors)}"
        + (f"; first: `{errors[0]}`" if errors else "")
        + "\n"
        '- "database is locked" in the logs: '
        + ", ".join(f"{name} {n}" for name, n in locked.items())
        + f"; tracebacks in the logs: {tracebacks}\n"
        f"- Runtime commit rate (store version growth while the clients ran): "
        f"{num(commit_rate)} transactions/s\n"
        f"- Simulator: `{summary or 'no summary line'}`\n"
        f"- Peak RSS (VmHWM) per gunicorn worker after the run: "
        + ", ".join(f"{num(v)} MB" for v in sorted(rss.values()))
    )
    section.targets.append(
        Target("Errors under load", str(len(errors)), "0", not errors and total > 0)
    )
    section.targets.append(
        Target(
            '"database is locked" under load',
            str(sum(locked.values())),
            "0",
            not any(locked.values()),
        )
    )
    return section
