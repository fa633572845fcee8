"""Benchmark 1's floor: one storage transaction against a bare durable one-row commit,
in one process (issue 35, "writes near the limit").

The storage transaction is benchmark 1's (accept an Event, claim the Work's pending
attempt, mark the Event routed: ``OrmStore.transact``). The bare commit is what the
disk and the engine allow a writer at all: BEGIN, one UPDATE of one row of a scratch
table in the same database, COMMIT, with the storage API's durability (SQLite: WAL,
synchronous=FULL, BEGIN IMMEDIATE; PostgreSQL: SERIALIZABLE, synchronous_commit=on).
Both in one long-lived child, each on a connection kept open (the storage API's
Django connection, and the driver's own), interleaved in rounds whose order
alternates (ABBA), so the machine's drift falls on both; the ratio is of the medians
of the per-transaction times, with the median and spread of the per-round ratios.
A profile of the storage path (cProfile over one more round) says where the rest goes.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import time
from typing import Any

from .config import Sizes
from .pg import Postgres
from .proc import Workspace, child, log
from .report import Section, Target, ms, ratio, table
from .stats import Spread

# Issue 35's goals: one storage transaction within this many bare commits.
GOALS = {"SQLite": 2.5, "PostgreSQL": 3.0}
PROFILED = 12  # functions listed from the profile


def measure(rounds: int, per_round: int) -> dict[str, Any]:
    """(child) Seconds per transaction of each path, per round, and the profile of
    the storage path. Uses the Work ``throughput.prepare`` made, from the first on."""
    from django.db import connections

    from storage import Event, Guard, Payload, Tx
    from storage.default import default_store

    from .throughput import EVENT_TYPE, LEASE_NS, OWNER, PAYLOAD, _ids

    store = default_store()
    vendor = connections[store.using].vendor
    bare = _bare_sqlite() if vendor == "sqlite" else _bare_postgres()
    payload = Payload("bench.order", PAYLOAD)
    serial = iter(range(10**9))

    def storage_tx() -> None:
        w, x, e = _ids(next(serial))

        def op(tx: Tx) -> None:
            event = Event(e, "bench", e, EVENT_TYPE, work_id=w, payload=payload)
            stored, _ = tx.accept_event(event)
            tx.claim(x, OWNER, tx.now + LEASE_NS)
            tx.mark_routed(stored.id, w, "routed")

        store.transact(Guard(), op)

    def timed(fn: Any) -> float:
        started = time.perf_counter()
        for _ in range(per_round):
            fn()
        return (time.perf_counter() - started) / per_round

    for _ in range(2):  # warm-up: connections, caches, the scratch row's page
        storage_tx()
        bare.commit()
    api: list[float] = []
    floor: list[float] = []
    for n in range(rounds):
        if n % 2:
            floor.append(timed(bare.commit))
            api.append(timed(storage_tx))
        else:
            api.append(timed(storage_tx))
            floor.append(timed(bare.commit))
    profile = cProfile.Profile()
    profile.enable()
    timed(storage_tx)
    profile.disable()
    bare.close()
    return {"api": api, "floor": floor, "settings": bare.settings, "profile": _top(profile)}


def _top(profile: cProfile.Profile) -> list[list[Any]]:
    """The functions the storage path spent its own time in, most first: where, and
    the share of the profiled round's total."""
    stats = pstats.Stats(profile)
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in entries.values()) or 1.0
    ranked = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)
    root = os.getcwd()
    out = []
    for (path, line, name), row in ranked[:PROFILED]:
        where = path.replace(root + os.sep, "") if path.startswith(root) else path.split(os.sep)[-1]
        out.append([f"{where}:{line}({name})" if line else name, row[2] / total])
    return out


class _Bare:
    """A driver connection doing the one-row commit, with its settings as read back."""

    def __init__(self, conn: Any, begin: str, update: str, settings: dict[str, str]) -> None:
        self.conn, self.begin, self.update, self.settings = conn, begin, update, settings

    def commit(self) -> None:
        self.conn.execute(self.begin)
        self.conn.execute(self.update)
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def _bare_sqlite() -> _Bare:
    import sqlite3

    # A database file of its own beside the store's (same folder, same disk): on the
    # store's file each bare commit would invalidate the storage connection's page
    # cache, and the storage transaction would pay for the floor's writes.
    path = os.environ["CONDUIT_SQLITE_PATH"] + ".floor"
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "busy_timeout=30000"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("CREATE TABLE IF NOT EXISTS bench_commit_floor (id INTEGER PRIMARY KEY, n BIGINT)")
    conn.execute("INSERT OR IGNORE INTO bench_commit_floor VALUES (1, 0)")
    names = ("journal_mode", "synchronous")
    settings = {n: str(conn.execute(f"PRAGMA {n}").fetchone()[0]) for n in names}
    update = "UPDATE bench_commit_floor SET n = n + 1 WHERE id = 1"
    return _Bare(conn, "BEGIN IMMEDIATE", update, settings)


def _bare_postgres() -> _Bare:
    import psycopg

    conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    conn.execute("SET synchronous_commit = on")
    conn.execute("CREATE TABLE IF NOT EXISTS bench_commit_floor (id BIGINT PRIMARY KEY, n BIGINT)")
    conn.execute("INSERT INTO bench_commit_floor VALUES (1, 0) ON CONFLICT DO NOTHING")
    settings = {}
    for name in ("synchronous_commit", "fsync"):
        row = conn.execute(f"SHOW {name}").fetchone()
        settings[name] = str(row[0]) if row else ""
    update = "UPDATE bench_commit_floor SET n = n + 1 WHERE id = 1"
    return _Bare(conn, "BEGIN ISOLATION LEVEL SERIALIZABLE", update, settings)


# ---------------------------------------------------------------- orchestration


def run_engine(ws: Workspace, sizes: Sizes, engine: str, pg: Postgres | None) -> dict[str, Any]:
    """The measurement on a fresh database of ``engine`` with its Work prepared."""
    url = pg.database("commit_floor") if pg is not None else ""
    data = ws.migrated(f"commit-floor-{engine}", url)
    child(data, "throughput.prepare", count=(sizes.floor_rounds + 1) * sizes.floor_per_round + 4)
    log(f"  {engine}: storage transaction vs bare commit, {sizes.floor_rounds} rounds")
    result = child(
        data, "commit_floor.measure", rounds=sizes.floor_rounds, per_round=sizes.floor_per_round
    )
    if pg is not None:
        pg.drop(data.database_url)
    ws.discard(data)
    return dict(result)


def add(section: Section, label: str, sizes: Sizes, result: dict[str, Any]) -> None:
    api, floor = Spread.of(result["api"]), Spread.of(result["floor"])
    pairs = Spread.of([a / b for a, b in zip(result["api"], result["floor"], strict=True)])
    cost = api.median / floor.median
    goal = GOALS[label]
    settings = ", ".join(f"{k}={v}" for k, v in result["settings"].items())
    rows = [
        ["storage transaction", ms(api), ratio(cost)],
        ["bare one-row commit", ms(floor), "1 (baseline)"],
    ]
    profile = "\n".join(
        f"{n}. `{where}` {share:.0%}" for n, (where, share) in enumerate(result["profile"], 1)
    )
    section.add(
        f"{label}: one storage transaction against a bare durable one-row commit, in one "
        f"process, each on a connection kept open, interleaved in {api.n} rounds of "
        f"{sizes.floor_per_round} (ABBA); the bare commit's settings: {settings}. Per "
        f"round ratio median {ratio(statistics.median(pairs.values))}, "
        f"{ratio(pairs.min)}-{ratio(pairs.max)}.\n\n"
        + table(["Path", "Per transaction", "Time vs bare commit"], rows)
        + f"\n\n<details><summary>Where the storage transaction's time goes ({label}, "
        "cProfile, own time, share of the profiled round)</summary>\n\n"
        f"{profile}\n\n</details>"
    )
    section.targets.append(
        Target(
            f"{label}: storage transaction vs a bare durable one-row commit (one process)",
            ratio(cost),
            f"<= {goal}x",
            cost <= goal,
        )
    )
