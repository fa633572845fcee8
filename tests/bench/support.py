"""Checks of a benchmark history, run in a child process on its data folder
(``python -m tests.bench.support``, the environment of ``bench.proc.DataDir.env``):
prints, as JSON, every problem found, each a sentence (an empty list: none).

- the contract's invariants (``tests.demo.invariants``);
- the Work tally recounted from the Work records (``storage.meaning.tally.keys`` of
  each decoded record) against the stored tally rows: the bulk path writes the
  columns and the JSON apart, so a column that disagrees with its record shows here;
- each Work's error group against the one the rules derive from its latest attempt
  and Waits (``storage.meaning.triage.failure_key``), for failed Work.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict


def problems() -> list[str]:
    from django.db import connection

    from storage import WorkQuery, WorkState, view
    from storage.default import default_store
    from storage.meaning import tally, triage
    from storage.records import Execution
    from tests.demo.invariants import check, snapshot

    store = default_store()
    snap = snapshot(store)
    out = check(snap)
    expected: Counter[tuple[str, ...]] = Counter()
    for work in snap.works.values():
        for key in tally.keys(work):
            expected[key] += 1
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT state, scope_id, kind, dimension, value, n FROM conduit_work_tally WHERE n <> 0"
        )
        stored = {tuple(row[:5]): row[5] for row in cursor.fetchall()}
    for key in expected.keys() | stored.keys():
        if expected.get(key, 0) != stored.get(key, 0):
            out.append(f"tally row {key}: {stored.get(key, 0)} stored, {expected[key]} counted")
    latest: dict[str, Execution] = {}
    for x in snap.executions:
        have = latest.get(x.work_id)
        if have is None or x.attempt > have.attempt:
            latest[x.work_id] = x
    waits = defaultdict(list)
    for wait in snap.waits:
        waits[wait.work_id].append(wait)
    for work in snap.works.values():
        if work.state is WorkState.FAILED:
            want = triage.failure_key(latest.get(work.id), waits[work.id])
            if want != work.error_group:
                out.append(
                    f"Work {work.id} is in group {work.error_group!r}, its attempt in {want!r}"
                )
    counted = view(store, None, lambda tx: tx.count_works(WorkQuery()))
    if counted != len(snap.works):
        out.append(f"the store counts {counted} Work of {len(snap.works)}")
    return out


if __name__ == "__main__":
    import django

    django.setup()
    sys.stdout.write(json.dumps(problems()) + "\n")
