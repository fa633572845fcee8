"""``python -m bench.child TASK ARGS_JSON``: one measurement in a child process.

The environment (built by ``bench.proc.DataDir.env``) names the data folder and, for
PostgreSQL, DATABASE_URL. Django is set up first unless the task is a plain-driver
baseline. The task's result is printed as the last line of stdout, as JSON.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from . import (
    commit_floor,
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
    worklist,
)

# Tasks that must not load Django: the plain-driver baselines of benchmark 1.
PLAIN: dict[str, Callable[..., Any]] = {
    "throughput.raw_sqlite": throughput.raw_sqlite,
    "throughput.raw_postgres": throughput.raw_postgres,
}
DJANGO: dict[str, Callable[..., Any]] = {
    "history.unrouted": history.add_unrouted,
    "density.add_routed": density.add_routed,
    "history.rebuild_tally": history.rebuild_tally,
    "throughput.prepare": throughput.prepare,
    "throughput.orm": throughput.orm,
    "commit_floor.measure": commit_floor.measure,
    "selection.measure": selection.measure,
    "worklist.measure": worklist.measure,
    "readers.reader": readers.reader,
    "readers.writer": readers.writer,
    "load.setup": load.setup,
    "routed.measure": routed.measure,
    "triage.measure": triage.measure,
    "routed_files.measure": routed_files.measure,
    "routed_pages.measure": routed_pages.measure,
    "past.measure": past.measure,
    "poll_cost.measure": poll_cost.measure,
}


def main(argv: list[str]) -> None:
    task, args = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    if task in PLAIN:
        fn = PLAIN[task]
    else:
        import django

        django.setup()
        fn = DJANGO[task]
    result = fn(**args)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
