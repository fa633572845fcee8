"""The production density of an amplified history, and the census of any history.

``BENCH_DENSITY=production`` (the default of a full run, ``bench.run``): the seed's
copies (``history.amplify``) come at a team's arrival rate instead of the seed's. The
seed (``generate --realistic``) writes its Work over about 20 days, ~485 a day at
10,000 Work, so a million cloned at that rate would span 5.6 years and every 7-day
window would hold the seed's few thousand; here each copy's times are compressed
towards the seed's newest instant so that one copy covers what a team writes in that
many Work at ``RATE`` a day, and copy k sits k such spans back: at 1,000,000 Work
the last month holds most of the history and every dashboard window is dense. Order
within a copy is kept (one linear map of every time: a Work's attempts, Events and
Waits stay in their order), live Work stays as recent as the seed's.

Long tails, per copy (``tails``): the executors of a copy's terminal Work get one of
``EXECUTORS`` variants (odd copies keep the seed's names: a few big executors and a
tail of small ones), its keyed sources one of ``SOURCES`` variants the same way, and
its failed Work's error groups one of three variants by the Work's rank (one shared
by every copy, one by ten copies, one the copy's own; a fourth of the Work keeps the
seed's group): hundreds of groups at 1,000,000, a few big ones first. The variants
are words of letters, so ``storage.meaning.triage.error_key`` of the varied message
is the varied group and the rules would group the Work the same way. A few Work of
the most recent copy get ``HEAVY_EVENTS`` and more routed Events (copies of one of
theirs), and the history gets run records and routed workflows, one of each per 100
Work (``add_routed``: a real seed of each, written through the storage APIs, then
cloned in SQL).

``census`` counts what a history holds (plain SQL on the SQLite file), so a report
shows the shape of what it measured.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

SEED, PRODUCTION = "seed", "production"
DENSITIES = (SEED, PRODUCTION)
DAY_NS = 86_400 * 10**9
RATE = 32_000  # new Work a day at production density
EXECUTORS = 19  # executor variants (odd copies keep the seed's)
SOURCES = 29  # keyed-source variants (every third copy keeps the seed's)
HEAVY_EVENTS = 1_000  # the fewest Events of a heavy Work
HEAVY_EVERY = 100_000  # one heavy Work per this many Work (at least one)
ROUTED_EVERY = 100  # one run record and one workflow per this many Work
RUN_SEED_TICKS = 240  # graph-run ticks of the run-record seed (a few dozen records)


def compression(density: str, span: int, seeded: int) -> tuple[int, int]:
    """(divisor of a copy's times, ns between two copies): the seed's span and no
    compression at seed density; at production density a copy of ``seeded`` Work
    covers ``seeded / RATE`` days."""
    if density == SEED:
        return 1, span
    step = max(1, seeded * DAY_NS // RATE)
    return max(1, span // step), step


def word(n: int) -> str:
    """A name of letters for ``n`` ("qa", "qb", ... "qzz"): no digits, so an error
    message holding it keeps it in its group (``error_key`` rewrites only tokens with
    a digit, UUIDs and runs of space)."""
    letters = ""
    while True:
        letters = chr(ord("a") + n % 26) + letters
        n //= 26
        if n == 0:
            return "q" + letters


def tails(density: str, copy: int) -> dict[str, str]:
    """Copy ``copy``'s variants of the error groups (``g1``-``g3``), executors
    (``ex``) and keyed sources (``src``); all "" at seed density."""
    if density == SEED:
        return {"g1": "", "g2": "", "g3": "", "ex": "", "src": ""}
    return {
        "g1": " in " + word(0),
        "g2": " in " + word(1 + copy // 10),
        "g3": " in " + word(1_000 + copy),
        "ex": "" if copy % 2 else "-" + word(copy // 2 % EXECUTORS),
        "src": "" if copy % 3 == 0 else "." + word(copy % SOURCES),
    }


def heavy_count(works: int) -> int:
    return max(1, works // HEAVY_EVERY)


def routed_count(works: int) -> int:
    return max(1, works // ROUTED_EVERY)


def heavy_events(con: sqlite3.Connection, cloned: int) -> int:
    """(during the clone, ``history._clone``) Give a few terminal Work of the first
    (most recent) copy ``HEAVY_EVENTS`` and more routed Events: copies of one of
    their own, under new IDs and delivery IDs. Returns the Events added."""
    picks = con.execute(
        "SELECT min(id) || '-c0001' FROM temp.src_event WHERE f = 1 AND rank > 0"
        " AND disposition = 'routed' GROUP BY rank ORDER BY rank LIMIT ?",
        (heavy_count(cloned),),
    ).fetchall()
    added = 0
    con.execute("BEGIN")
    for i, (event_id,) in enumerate(picks):
        count = HEAVY_EVENTS + 250 * i
        con.execute(HEAVY_SQL, {"id": event_id, "count": count})
        added += count
    con.execute("COMMIT")
    return added


HEAVY_SQL = """WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO conduit_event (id, source, delivery_id, type, work_id, causation_id, scope_id,
    route_work_id, disposition, routed_ns, data)
SELECT e.id || '-h' || n.i, e.source, e.delivery_id || '-h' || n.i, e.type, e.work_id,
    e.causation_id, e.scope_id, e.route_work_id, e.disposition, e.routed_ns,
    json_set(e.data, '$.id', e.id || '-h' || n.i, '$.delivery_id', e.delivery_id || '-h' || n.i)
FROM conduit_event e, n WHERE e.id = :id ORDER BY n.i"""


def add_routed(count: int) -> dict[str, int]:
    """(child) Run records and routed workflows up to ``count`` each: graph runs
    driven through the run store's Sessions (``demo.graphruns``) and workflows
    admitted through ``RoutedStore`` (benchmark 9's seed), then their rows cloned in
    SQL under new IDs."""
    from collections import Counter

    from demo.graphruns import GraphRunner
    from storage.default import default_store, run_store_for

    from . import routed_pages

    runs = run_store_for(default_store())
    runner = GraphRunner(runs, 1, 0, Counter())
    try:
        for tick in range(RUN_SEED_TICKS):
            runner.tick(tick)
    finally:
        runner.close()
        runs.close()
    records = _clone_runs(count)
    routed_pages._seed_workflows()
    workflows = routed_pages._clone(count)
    return {"runs": records, "workflows": workflows}


def _clone_runs(total: int) -> int:
    """Clone the run records under new run IDs (the ID inside the record too) until
    there are ``total``; each clone keeps its seed's times, less a minute per round."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("SELECT run_id FROM conduit_run_record ORDER BY run_id")
        seed = [row[0] for row in cursor.fetchall()]
    if not seed:
        raise RuntimeError("the graph runs saved no run record")
    have, round_ = len(seed), 0
    while have < total:
        round_ += 1
        take = min(len(seed), total - have)
        listed = ", ".join(["%s"] * take)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"{CLONE_RUNS_SQL} ({listed})",
                [round_, round_ * 60 * 10**9, round_ * 60 * 10**9, round_, *seed[:take]],
            )
        have += take
    return have


# A round of run-record clones: a new run ID (the seed's first 24 hex digits and the
# round's 8), inside the record too, a minute older per round; "%%" is Django's "%".
CLONE_RUNS_SQL = (
    "INSERT INTO conduit_run_record (run_id, format, revision, created_ns,"
    " updated_ns, data) SELECT substr(run_id, 1, 24) || printf('%%08x', %s),"
    " format, revision, created_ns - %s, updated_ns - %s,"
    " CAST(replace(CAST(data AS TEXT), run_id,"
    " substr(run_id, 1, 24) || printf('%%08x', %s)) AS BLOB)"
    " FROM conduit_run_record WHERE run_id IN"
)


def census(db: Path, now_ns: int | None = None) -> dict[str, Any]:
    """What a history holds (plain SQL, read only): Work and the live share, attempts
    and Events per Work (mean, 99th percentile over every Work, max), Work created and
    ended in the last hour, day, week and 30 days (before ``now_ns``, the wall clock
    by default, as the dashboards count), the distinct sources, executors, error
    groups, kinds and Scopes, run records and workflows."""
    now = now_ns if now_ns is not None else time.time_ns()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        one = lambda sql, *a: con.execute(sql, a).fetchone()[0]  # noqa: E731
        works = one("SELECT count(*) FROM conduit_work")
        out: dict[str, Any] = {
            "works": works,
            "live": one(
                "SELECT count(*) FROM conduit_work WHERE state IN ('ready','running','waiting')"
            ),
        }
        per = {
            "attempts": "SELECT count(*) AS n FROM conduit_execution GROUP BY work_id",
            "events": "SELECT count(*) AS n FROM conduit_event WHERE route_work_id <> ''"
            " GROUP BY route_work_id",
        }
        for name, grouped in per.items():
            total = one(f"SELECT coalesce(sum(n), 0) FROM ({grouped})")  # noqa: S608
            p99 = con.execute(
                f"SELECT n FROM ({grouped}) ORDER BY n DESC LIMIT 1 OFFSET ?",  # noqa: S608
                (works // 100,),
            ).fetchone()
            out[name] = {
                "total": total,
                "mean": total / works if works else 0.0,
                "p99": p99[0] if p99 else 0,
                "max": one(f"SELECT coalesce(max(n), 0) FROM ({grouped})"),  # noqa: S608
            }
        windows = {"1h": 3_600, "24h": 86_400, "7d": 7 * 86_400, "30d": 30 * 86_400}
        out["windows"] = {
            name: {
                "created": one(
                    "SELECT count(*) FROM conduit_work WHERE created_ns >= ?", now - s * 10**9
                ),
                "ended": one(
                    "SELECT count(*) FROM conduit_work WHERE updated_ns >= ?"
                    " AND state IN ('completed','failed','cancelled')",
                    now - s * 10**9,
                ),
            }
            for name, s in windows.items()
        }
        distinct = {
            "sources": "source",
            "executors": "latest_executor",
            "error_groups": "error_group",
            "kinds": "kind",
            "scopes": "scope_id",
        }
        out["distinct"] = {
            name: one(
                f"SELECT count(*) FROM (SELECT DISTINCT {column} FROM conduit_work"  # noqa: S608
                f" WHERE {column} <> '')"
            )
            for name, column in distinct.items()
        }
        out["run_records"] = one("SELECT count(*) FROM conduit_run_record")
        out["workflows"] = one("SELECT count(*) FROM conduit_routed_workflow")
        return out
    finally:
        con.close()


def census_rows(name: str, c: dict[str, Any]) -> list[str]:
    """One history's census as a row of the report's census table."""
    a, e, w, d = c["attempts"], c["events"], c["windows"], c["distinct"]
    share = c["live"] / c["works"] if c["works"] else 0.0
    return [
        name,
        f"{c['works']:,}",
        f"{share:.1%}",
        f"{a['mean']:.1f} / {a['p99']} / {a['max']}",
        f"{e['mean']:.1f} / {e['p99']} / {e['max']:,}",
        " / ".join(f"{w[k]['created']:,}" for k in ("1h", "24h", "7d", "30d")),
        " / ".join(f"{w[k]['ended']:,}" for k in ("1h", "24h", "7d", "30d")),
        " / ".join(
            f"{d[k]:,}" for k in ("sources", "executors", "error_groups", "kinds", "scopes")
        ),
        f"{c['run_records']:,} / {c['workflows']:,}",
    ]


CENSUS_HEADER = [
    "History",
    "Work",
    "live",
    "attempts per Work (mean / p99 / max)",
    "Events per Work (mean / p99 / max)",
    "created in 1h / 24h / 7d / 30d",
    "ended in 1h / 24h / 7d / 30d",
    "sources / executors / error groups / kinds / Scopes",
    "run records / workflows",
]
