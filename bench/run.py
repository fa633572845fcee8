"""The orchestrator: sizes, the histories, each benchmark in turn, the report.

    .venv/bin/python -m bench            quick mode, writes bench/report.md
    BENCH_FULL=1 .venv/bin/python -m bench   full sizes, writes bench/RESULTS.md

Options: ``--only 1,3`` runs some benchmarks; ``--no-pg`` (or BENCH_PG=0) skips
PostgreSQL; ``--keep`` (or BENCH_KEEP=1) keeps the data folders; ``--reuse DIR`` (or
BENCH_REUSE) keeps the histories in DIR and reuses those built there; ``--out PATH``.
Progress goes to stderr. A benchmark that crashes is reported as such, the others
still run, and the exit status is 1; a missed target never changes the exit status.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from . import (
    density,
    history,
    load,
    past,
    poll_cost,
    readers,
    routed,
    routed_files,
    routed_pages,
    selection,
    throughput,
    triage,
    wire,
    worklist,
)
from .config import FULL, QUICK, TOY, Sizes
from .pg import Postgres, find
from .proc import ROOT, DataDir, Workspace, log, manage
from .report import Section, Target, machine, write

ALL = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12")
TITLES = {
    "1": "Transaction throughput",
    "2": "Cost follows the selection, not the history",
    "3": "The Work list against Django admin, and the dashboards",
    "4": "Views never wait for writers",
    "5": "Under load",
    "6": "Routed runs: admission and control",
    "7": "Triage: exhausted Work, error groups, bulk retry",
    "8": "Routed runs: journal appends and artifact accepts",
    "9": "Routed runs: the Workflows list and the workflow page",
    "10": "Polls on the wire, compressed and not",
    "11": "The store's past: pages as of a moment",
    "12": "Polls while the runtime commits",
}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", default=_flag("BENCH_FULL"))
    parser.add_argument("--toy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", default=",".join(ALL), help="benchmarks to run (1,...,12)")
    parser.add_argument(
        "--no-pg",
        dest="pg",
        action="store_false",
        default=os.environ.get("BENCH_PG", "1").strip() not in ("0", "false", "no", "off"),
    )
    parser.add_argument("--keep", action="store_true", default=_flag("BENCH_KEEP"))
    parser.add_argument(
        "--load-history",
        choices=("small", "large", "both"),
        default=os.environ.get("BENCH_LOAD_HISTORY", ""),
        help="the histories benchmark 5 runs on (default: both in a full run, else small)",
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        default=os.environ.get("BENCH_REUSE") or None,
        help="keep the histories in this folder and reuse those an earlier run built there "
        "with the same sizes (migrated to the current schema, tallies counted again)",
    )
    parser.add_argument(
        "--density",
        choices=density.DENSITIES,
        default=os.environ.get("BENCH_DENSITY") or None,
        help="the page benchmarks' histories: the seed's arrival rate, or a team's "
        "(bench/density.py; default: production in a full run, else seed)",
    )
    parser.add_argument("--out", type=Path, default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    sizes: Sizes = TOY if args.toy else FULL if args.full else QUICK
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    unknown = only - set(ALL)
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    out = args.out or ROOT / "bench" / ("RESULTS.md" if sizes is FULL else "report.md")
    # The realistic histories' density (bench/density.py): a full run measures the
    # pages at a team's density, a quick run at the seed's unless asked.
    dense = args.density or (density.PRODUCTION if sizes is FULL else density.SEED)
    started_at, started = dt.datetime.now(dt.UTC), time.monotonic()
    ws = Workspace(keep=args.keep)
    # Where the seed and the amplified histories live: the run's own folder, or a kept
    # one whose histories later runs reuse (an hour of cloning at full size).
    kept = ws
    if args.reuse is not None:
        args.reuse.mkdir(parents=True, exist_ok=True)
        kept = Workspace(root=args.reuse.resolve(), keep=True)
    # Collected once per run; every child's settings (bench.settings) read it.
    os.environ["BENCH_STATIC_ROOT"] = str(ws.root / "static")
    log(f"{sizes.name} run in {ws.root}; report: {out}")
    info = machine(ws.root)
    pg: Postgres | None = None
    pg_status = "not run (only benchmarks 3-5 selected)"
    sections: dict[str, Section] = {}
    failed = False
    built: dict[str, DataDir] = {}  # the histories, by name: the report's census

    def attempt(number: str, fn: Callable[[], Section]) -> None:
        nonlocal failed
        if number not in only:
            return
        try:
            sections[number] = fn()
        except Exception as exc:  # one crash must not lose the other results
            failed = True
            log(f"benchmark {number} FAILED:\n{traceback.format_exc()}")
            section = Section(number, TITLES[number], "The benchmark did not complete.")
            section.add(f"```\n{type(exc).__name__}: {exc}\n```")
            section.targets.append(Target("the benchmark ran", "crashed", "ran", False))
            sections[number] = section

    try:
        if only & {"1", "2", "6", "8", "11", "12"}:
            pg, pg_status = find(args.pg)
            if pg is not None:
                pg_status = pg.describe()
            log(f"PostgreSQL: {pg_status}")
        manage(ws.fresh("collectstatic"), "collectstatic", "--noinput", "-v", "0")
        if only & {"2", "3", "4", "5", "7", "9", "10", "11", "12"}:
            log(f"seed history: manage.py generate --works {sizes.seed:,}")
            seed = history.seed(kept, sizes.seed, sizes.unrouted, progress=sizes is not TOY)
            log(f"seed: {seed.line} (wall {seed.seconds:.0f} s)")
            built["seed"] = seed.data
        attempt("1", lambda: throughput.run(ws, sizes, pg))

        def benchmark_2() -> Section:
            section, built["small"], built["large"] = selection.run(ws, kept, seed, sizes, pg)
            return section

        def history_of(key: str, realistic: bool = False) -> DataDir:
            """Benchmark 2's histories (the seed's live set under more retained
            history), or the realistic ones (everything in proportion, benchmark 3)."""
            if key == "routed":  # benchmark 9: as many Work as workflows
                if sizes.routed_workflows == sizes.small:
                    return history_of("small", realistic)
                if sizes.routed_workflows == sizes.large:
                    return history_of("large", realistic)
            kind = ("realistic" if dense == density.SEED else dense) if realistic else ""
            name = f"{kind}-{key}" if kind else key
            if name not in built:
                works = {"small": sizes.small, "large": sizes.large}.get(
                    key, sizes.routed_workflows
                )
                log(f"history: {works:,} Work{f' ({kind})' if kind else ''}")
                built[name] = history.amplify(
                    kept,
                    seed,
                    works,
                    f"history-{name}",
                    proportional=realistic,
                    density=dense if realistic else density.SEED,
                )
                log(f"census of history-{name}: {density.census(built[name].db)}")
            return built[name]

        attempt("2", benchmark_2)
        attempt(
            "3",
            lambda: worklist.run(
                ws, {key: history_of(key, realistic=True) for key in ("small", "large")}, sizes
            ),
        )
        attempt("4", lambda: readers.run(ws, history_of("small"), sizes))
        # The page benchmarks (3, 5, 7, 9) share the realistic histories: built once,
        # and the pages see the live set, attempts and Events in proportion (issue 22).
        # Issue 22 asks every page benchmark at both sizes; a quick run keeps to the
        # small one unless asked (the large one's mix is where memory and polls show).
        loads = args.load_history or ("both" if sizes is FULL else "small")
        keys = ("small", "large") if loads == "both" else (loads,)
        attempt("5", lambda: load.run(ws, [history_of(k, realistic=True) for k in keys], sizes))
        attempt("6", lambda: routed.run(ws, sizes, pg))
        attempt(
            "7",
            lambda: triage.run(
                ws, {key: history_of(key, realistic=True) for key in ("small", "large")}, sizes
            ),
        )
        attempt("8", lambda: routed_files.run(ws, sizes, pg))
        attempt("9", lambda: routed_pages.run(ws, history_of("routed", realistic=True), sizes))
        attempt("10", lambda: wire.run(ws, history_of("small", realistic=True), sizes))
        attempt(
            "11",
            lambda: past.run(
                ws, {key: history_of(key, realistic=True) for key in ("small", "large")}, sizes, pg
            ),
        )
        attempt(
            "12",
            lambda: poll_cost.run(
                ws, {key: history_of(key, realistic=True) for key in ("small", "large")}, sizes, pg
            ),
        )
    finally:
        if pg is not None:
            pg.close()
        ws.close()
    mode = {"toy": "Toy (smoke test)", "quick": "Quick", "full": "Full"}[sizes.name]
    command = (
        ("BENCH_FULL=1 " if sizes is FULL else "")
        + (f"BENCH_REUSE={args.reuse} " if args.reuse is not None else "")
        + "make bench"
    )
    for number in ALL:
        if number not in sections:
            sections[number] = Section(number, TITLES[number], "Not run (`--only`).")
    write(
        out,
        mode=mode,
        command=command,
        machine_info=info,
        postgres=pg_status,
        sections=[sections[n] for n in ALL],
        started=started_at,
        seconds=time.monotonic() - started,
        census=[
            density.census_rows(
                f"`{data.path.name}`" + (" (reused)" if data.path.name in kept.reused else ""),
                density.census(data.db),
            )
            for data in built.values()
            if data.db.exists()
        ],
        density=dense,
        reused=(
            f"Histories reused (`--reuse {args.reuse}`), built by an earlier run with "
            "the same sizes through the same bulk path, then migrated to this code's "
            "schema and their tallies counted again: "
            + ", ".join(f"`{name}`" for name in kept.reused)
            + "; building them is not in this run's time."
            if kept.reused
            else ""
        ),
    )
    log(f"report written to {out}")
    return 1 if failed else 0
