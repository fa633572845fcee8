"""Benchmark 2: the cost of live reads and first pages follows the selection, not the
retained history.

Two histories amplified from one seed (bench.history): the same live set (live Work,
live attempts, active Waits, unrouted Events) over a small and a large retained
history. Each read is one ``storage.view`` call, as the console and the runtime make it.
"""

from __future__ import annotations

from typing import Any

from .config import Sizes
from .history import Seed, amplify, census
from .pg import Postgres, copy_history
from .proc import DataDir, Workspace, child, log
from .report import Section, Target, ms, num, ratio, table
from .stats import Spread

# Reads whose cost must follow the selection; labels as the report shows them.
SELECTIVE = (
    ("live_works", "`live_works()`"),
    ("live_executions", "`live_executions()`"),
    ("active_waits", "`active_waits()`"),
    ("unrouted", "`unrouted_events(limit=100)`"),
    ("first_page", "`query_works` first page (limit 50, newest first)"),
    ("failed_page", "`query_works` first page, `states={failed}`"),
)
# Reads over the whole filter: stated, not held to the ratio.
WHOLE = (
    ("count", "`count_works()` (no filter)"),
    ("facets", "`work_facets()` (no filter)"),
    ("count_failed", "`count_works(states={failed})`"),
    ("facets_failed", "`work_facets(states={failed})`"),
)


def measure(reps: int) -> dict[str, Any]:
    """(child) For each read: rows selected and seconds per call (one View each)."""
    from storage import WorkQuery, WorkState, view
    from storage.default import default_store

    from .stats import timed

    store = default_store()
    failed = frozenset({WorkState.FAILED})
    reads = {
        "live_works": lambda tx: tx.live_works(),
        "live_executions": lambda tx: tx.live_executions(),
        "active_waits": lambda tx: tx.active_waits(),
        "unrouted": lambda tx: tx.unrouted_events(limit=100),
        "first_page": lambda tx: tx.query_works(WorkQuery(limit=50)),
        "failed_page": lambda tx: tx.query_works(WorkQuery(states=failed, limit=50)),
        "count": lambda tx: tx.count_works(WorkQuery()),
        "facets": lambda tx: tx.work_facets(WorkQuery()),
        "count_failed": lambda tx: tx.count_works(WorkQuery(states=failed)),
        "facets_failed": lambda tx: tx.work_facets(WorkQuery(states=failed)),
    }
    out: dict[str, Any] = {}
    for name, read in reads.items():

        def call(read: Any = read) -> Any:
            return view(store, None, lambda tx: read(tx))

        value = call()
        rows = value if isinstance(value, int) else _size(value)
        out[name] = {"rows": rows, "times": timed(call, reps)}
    return out


def _size(value: Any) -> int:
    if isinstance(value, list):
        return len(value)
    return sum(value.state.values())  # facets: the Work they count


def _pair(ws: Workspace, seed: Seed, sizes: Sizes) -> tuple[DataDir, DataDir]:
    log(f"benchmark 2: histories of {sizes.small:,} and {sizes.large:,} Work")
    small = amplify(ws, seed, sizes.small, "history-small", proportional=False)
    large = amplify(ws, seed, sizes.large, "history-large", proportional=False)
    return small, large


def run(
    ws: Workspace, kept: Workspace, seed: Seed, sizes: Sizes, pg: Postgres | None
) -> tuple[Section, DataDir, DataDir]:
    """Returns the section and the two built histories (templates for benchmarks 3-5),
    which live in ``kept`` (the run's folder, or one a later run reuses)."""
    small, large = _pair(kept, seed, sizes)
    section = Section(
        "2",
        "Cost follows the selection, not the history",
        f"Two histories from one seed: `manage.py generate --works {seed.works:,}` "
        f"({seed.rate:.0f} Work/s here) plus {sizes.unrouted} Events left unrouted, both "
        "through the storage API; then amplified to the sizes below by cloning the seed's "
        "terminal Work with its keys, attempts, routed Events and finished Waits under new "
        "IDs, shifted back in time (plain SQL; `bench/history.py` says why). Every live "
        "row is the seed's own, so both histories hold the same live set and differ only "
        "in retained terminal history. Each read is one `storage.view` call in a child "
        f"process on its own copy of the database, timed {sizes.reps} times after one "
        "untimed call (warm page cache), in two rounds (small, large, large, small) "
        f"pooled: {2 * sizes.reps} timings per figure.",
    )
    histories = {"small": small, "large": large}
    counts = {k: census(v) for k, v in histories.items()}
    section.add(_census_table(counts))
    engines: list[tuple[str, dict[str, DataDir]]] = [("SQLite", histories)]
    if pg is not None:
        log("benchmark 2: copying both histories to PostgreSQL")
        on_pg = {}
        for key, data in histories.items():
            url = pg.database(f"sel_{key}")
            target = ws.migrated(f"selection-pg-{key}", url)
            copy_history(data, url)
            on_pg[key] = target
        engines.append(("PostgreSQL", on_pg))
    counted: dict[str, dict[str, Any]] = {}
    for label, dirs in engines:
        if label == "SQLite":
            dirs = {key: ws.copy_of(data, f"selection-{key}") for key, data in dirs.items()}
        results: dict[str, dict[str, Any]] = {}
        # Two rounds, small then large then large then small, pooled: a drift in the
        # machine's load during the run weighs on both histories alike.
        for key in ("small", "large", "large", "small"):
            log(f"benchmark 2 on {label}: {key} history")
            got = child(dirs[key], "selection.measure", reps=sizes.reps)
            if key not in results:
                results[key] = got
            else:
                for name, read in got.items():
                    results[key][name]["times"] += read["times"]
        for data in dirs.values():
            if label == "SQLite":
                ws.discard(data)
            elif pg is not None:
                pg.drop(data.database_url)
        _add_engine(section, label, sizes, results)
        counted[label] = {k: {n: r["rows"] for n, r in v.items()} for k, v in results.items()}
    if "PostgreSQL" in counted:
        # The same history on both engines: a read that counts or selects other rows
        # on one of them times something else (an uncopied table, a wrong plan).
        same = counted["PostgreSQL"] == counted["SQLite"]
        section.targets.append(
            Target(
                "PostgreSQL selects and counts what SQLite does, every read",
                "same" if same else "differs",
                "same",
                same,
            )
        )
    return section, small, large


def _census_table(counts: dict[str, dict[str, Any]]) -> str:
    rows = [
        ["Work", "works"],
        ["live Work (ready, running, waiting)", "live_works"],
        ["attempts", "executions"],
        ["live attempts", "live_executions"],
        ["Events", "events"],
        ["unrouted Events", "unrouted"],
        ["Waits", "waits"],
        ["active Waits", "active_waits"],
    ]
    body = [[label] + [f"{counts[k][key]:,}" for k in ("small", "large")] for label, key in rows]
    body.append(["SQLite file"] + [f"{counts[k]['mb']:,.0f} MB" for k in ("small", "large")])
    return table(["Rows", "small history", "large history"], body)


def _add_engine(
    section: Section, label: str, sizes: Sizes, results: dict[str, dict[str, Any]]
) -> None:
    rows = []
    for key, name in SELECTIVE:
        small, large = results["small"][key], results["large"][key]
        a, b = Spread.of(small["times"]), Spread.of(large["times"])
        cost = b.median / a.median
        same = small["rows"] == large["rows"]
        rows.append(
            [
                name,
                f"{small['rows']:,}" + ("" if same else f" / {large['rows']:,}"),
                ms(a),
                ms(b),
                ratio(cost),
            ]
        )
        section.targets.append(
            Target(
                f"{label}: {name}, large/small history" + ("" if same else " (selections differ!)"),
                ratio(cost),
                "<= 1.5x",
                cost <= 1.5 and same,
            )
        )
    headers = [
        "Read (one View)",
        "Rows selected",
        f"{sizes.small:,} Work",
        f"{sizes.large:,} Work",
        "Large/small",
    ]
    section.add(f"**{label}**\n\n" + table(headers, rows))
    whole = []
    for key, name in WHOLE:
        small, large = results["small"][key], results["large"][key]
        whole.append(
            [
                name,
                f"{small['rows']:,} / {large['rows']:,}",
                ms(Spread.of(small["times"])),
                ms(Spread.of(large["times"])),
            ]
        )
    section.add(
        f"{label}, reads over the whole filter (they scan what they count; stated, not "
        "held to the ratio):\n\n"
        + table(
            ["Read (one View)", "Work counted", f"{sizes.small:,} Work", f"{sizes.large:,} Work"],
            whole,
        )
    )
    facets = Spread.of(results["large"]["facets"]["times"]).median
    count = Spread.of(results["large"]["count"]["times"]).median
    section.add(
        f"{label} at {sizes.large:,} Work: `count_works` {num(count * 1000)} ms, "
        f"`work_facets` {num(facets * 1000)} ms (medians)."
    )
