"""Benchmark 4: a View never waits for a writer.

Two child processes on one database. The writer opens a transaction through the
storage API, writes, and holds it open for ``hold`` seconds before committing. The
reader times the first page of ``query_works`` (one ``storage.view`` each) with no
writer, then again while the writer holds its lock, then makes one control read that
does take the write lock (a ``transact``), which must wait for the writer: it shows the
benchmark would see waiting if there were any. The processes report monotonic clock
readings (system-wide on Linux), so the report can state that every contended read
ran inside the writer's transaction.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

from .config import Sizes
from .proc import DataDir, Workspace, log, spawn
from .report import Section, Target, ms, num, ratio
from .stats import Spread


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def reader(reps: int, window: float) -> dict[str, Any]:
    """(child) Reads for ``window`` seconds with no writer; then, on "go", reads for the
    same window while the writer holds its transaction; then the control read."""
    from storage import Guard, WorkQuery, view
    from storage.default import default_store

    store = default_store()
    page = WorkQuery(limit=50)

    def read() -> Any:
        return view(store, None, lambda tx: tx.query_works(page))

    def sample() -> list[float]:
        """At least ``reps`` reads, more while the window lasts (at most 500)."""
        out: list[float] = []
        until = time.monotonic() + window
        while len(out) < reps or (time.monotonic() < until and len(out) < 500):
            started = time.perf_counter()
            read()
            out.append(time.perf_counter() - started)
        return out

    read(), read()  # warm-up: connection, caches
    _say({"baseline": sample()})
    sys.stdin.readline()  # "go": the writer holds its transaction open now
    start = time.monotonic()
    contended = sample()
    end = time.monotonic()
    control_start = time.monotonic()
    store.transact(Guard(), lambda tx: tx.query_works(page))
    control_end = time.monotonic()
    return {
        "contended": contended,
        "start": start,
        "end": end,
        "control": control_end - control_start,
        "control_end": control_end,
    }


def writer(hold: float) -> dict[str, Any]:
    """(child) On "go": a transaction that writes, then holds the write lock ``hold`` s."""
    import uuid

    from storage import Event, Guard, Tx
    from storage.default import default_store

    store = default_store()

    def accept(tx: Tx, wait: float) -> float:
        event_id = str(uuid.uuid4())
        tx.accept_event(Event(event_id, "bench", event_id, "bench.writer"))
        holding = time.monotonic()
        if wait:
            _say({"holding": holding})
            time.sleep(wait)  # the slow writer under test
        return holding

    store.transact(Guard(), lambda tx: accept(tx, 0))  # warm-up
    _say({"ready": True})
    sys.stdin.readline()
    holding = store.transact(Guard(), lambda tx: accept(tx, hold))
    return {"holding": holding, "committed": time.monotonic()}


def _line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    if proc.stdout is None:
        raise RuntimeError("no pipe")
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=10)
        err = proc.stderr.read() if proc.stderr else ""
        raise RuntimeError(f"benchmark 4 child ended early ({proc.returncode}):\n{err}")
    return dict(json.loads(line))


def _send(proc: subprocess.Popen[str], line: str) -> None:
    if proc.stdin is None:
        raise RuntimeError("no pipe")
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def run(ws: Workspace, small: DataDir, sizes: Sizes) -> Section:
    log(f"benchmark 4: a View while a writer holds its transaction {sizes.hold:g} s")
    data = ws.copy_of(small, "readers")
    # Reads fill half the hold, so all of them end well before the writer commits.
    reader_proc = spawn(data, "readers.reader", reps=sizes.reps, window=sizes.hold / 2)
    writer_proc = spawn(data, "readers.writer", hold=sizes.hold)
    procs = (reader_proc, writer_proc)
    # Bounded: whatever happens, both children are gone after this.
    watchdog = threading.Timer(120 + 4 * sizes.hold, lambda: [p.kill() for p in procs])
    watchdog.start()
    try:
        base = _line(reader_proc)["baseline"]
        _line(writer_proc)  # ready
        _send(writer_proc, "go")
        _line(writer_proc)  # holding
        _send(reader_proc, "go")
        got = _line(reader_proc)
        done = _line(writer_proc)
        for proc in procs:
            proc.wait(timeout=30)
    finally:
        watchdog.cancel()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    ws.discard(data)
    baseline, contended = Spread.of(base), Spread.of(got["contended"])
    inside = done["holding"] <= got["start"] and got["end"] <= done["committed"]
    cost = contended.median / baseline.median
    section = Section(
        "4",
        "Views never wait for writers",
        f"SQLite, the small history. Writer process: `transact` accepts an Event, then "
        f"holds the transaction (and SQLite's write lock) open for {sizes.hold:g} s before "
        f"committing. Reader process: the first page of `query_works` (limit 50), one "
        f"`storage.view` each, back to back for {sizes.hold / 2:g} s with no writer, then "
        f"for {sizes.hold / 2:g} s while the writer holds its lock (at least {sizes.reps} "
        "reads each).",
    )
    section.add(
        f"- No writer: {ms(baseline)} over {baseline.n} reads\n"
        f"- Writer holding its transaction: {ms(contended)} over {contended.n} reads\n"
        f"- Every contended read ran inside the writer's transaction: "
        f"{'yes' if inside else '**no**'} (reads from {num(got['start'] - done['holding'])} s "
        f"to {num(got['end'] - done['holding'])} s after the writer took the lock, which it "
        f"released at {num(done['committed'] - done['holding'])} s)\n"
        f"- Control: the same read through `transact` (which takes the write lock) took "
        f"{num(got['control'])} s: it waited for the writer, as a View must not."
    )
    section.targets.append(
        Target(
            "View read under a held write transaction vs no writer",
            ratio(cost) + ("" if inside else " (reads not inside the writer's transaction!)"),
            "<= 2.0x",
            cost <= 2.0 and inside,
        )
    )
    return section
