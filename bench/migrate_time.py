"""How long an upgrade's migrations take on a large history (issue 30, docs/deploy.md
"Upgrading"): ``python -m bench.migrate_time --works 1000000 [--no-pg] [--keep]``.

A realistic seed (``history.seed``: ``manage.py generate --realistic``) is amplified to
``--works`` Work (``history.amplify``), then, per engine and per starting point, a copy
of it is taken back to an older schema (``migrate_unsquashed storage <from>``: the columns, tables
and indexes later migrations add are dropped, untimed) and migrated to the latest with
``manage.py migrate -v 2``, whose per-migration times are reported. Two starting points:

- ``0020_timed_out_groups``, the release before the last: what the last upgrade costs;
- ``0007_routed_artifacts_progress``, before the first backfill: every data migration
  of this project at once, the worst upgrade a database written then would meet.

A database taken back keeps the current record JSON (a backfill rewrites what it
owns), so the backfills do the work they would on a database the old release wrote.
Writes to a table a migration changes wait while it runs (on SQLite every write waits:
one writer); reads go on. The report is the per-migration times and their sum.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time

from . import history
from .pg import copy_history, find
from .proc import DataDir, Workspace, log, manage

STARTS = ("0020_timed_out_groups", "0007_routed_artifacts_progress")
_APPLIED = re.compile(r"Applying (\S+)\.\.\. OK \(([\d.]+)s\)")


def _forward(data: DataDir) -> tuple[list[tuple[str, float]], float]:
    started = time.monotonic()
    out = manage(data, "migrate", "--noinput", "-v", "2")
    wall = time.monotonic() - started
    return [(name, float(s)) for name, s in _APPLIED.findall(out)], wall


def _report(
    engine: str, start: str, works: int, steps: list[tuple[str, float]], wall: float
) -> str:
    lines = [f"{engine}, {works:,} Work, from storage {start}: migrate took {wall:.1f} s"]
    lines += [f"  {name}: {seconds:.1f} s" for name, seconds in steps if seconds >= 0.05]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.migrate_time")
    parser.add_argument("--works", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=5_000)
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    ws = Workspace(keep=args.keep)
    reports = []
    try:
        seed = history.seed(ws, args.seed, 150, progress=False)
        big = history.amplify(ws, seed, args.works, "big")
        log(f"history of {args.works:,} Work ready in {ws.root}")
        pg, why = find(not args.no_pg)
        if pg is None:
            reports.append(f"PostgreSQL: {why}")
        try:
            # The last release's upgrade on both engines first, then the whole chain.
            for start in STARTS:
                data = ws.copy_of(big, f"sqlite-{start}")
                manage(data, "migrate_unsquashed", "storage", start, "--noinput", "-v", "0")
                steps, wall = _forward(data)
                reports.append(_report("SQLite", start, args.works, steps, wall))
                log(reports[-1])
                shutil.rmtree(data.path)
                if pg is None:
                    continue
                url = pg.database(f"migrate_{start[:4]}")
                data = big.on_postgres(url)
                manage(data, "migrate", "--noinput", "-v", "0")
                copy_history(big, url)
                manage(data, "migrate_unsquashed", "storage", start, "--noinput", "-v", "0")
                steps, wall = _forward(data)
                reports.append(_report("PostgreSQL", start, args.works, steps, wall))
                log(reports[-1])
                pg.drop(url)
        finally:
            if pg is not None:
                pg.close()
    finally:
        if not args.keep:
            shutil.rmtree(ws.root, ignore_errors=True)
    sys.stdout.write("\n".join(reports) + "\n")


if __name__ == "__main__":
    main()
