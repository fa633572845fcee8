"""Checks of a benchmark history, run in a child process on its data folder
(``python -m tests.bench.support``, the environment of ``bench.proc.DataDir.env``):
prints, as JSON, every problem found, each a sentence (an empty list: none).

- the contract's invariants (``tests.demo.invariants``);
- the Work tally recounted from the Work records (``storage.meaning.tally.keys`` of
  each decoded record) against the stored tally rows: the bulk path writes the
  columns and the JSON apart, so a column that disagrees with its record shows here;
- each Work's error group against the one the rules derive from its latest attempt
  and Waits (``storage.meaning.triage.failure_key``), for failed Work;
- the copied record-version log (``bench.version_log``): versions follow time, the
  store's version is past the log's, every cause names an Event, and a copied Work
  as of each of its versions is what its seed Work was as of the matching one.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage import Store


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
    return out + version_log_problems(store)


# Copied Work whose states as of each version the check compares with their seed's.
COMPARED = 25


def version_log_problems(store: Store) -> list[str]:
    from django.db import connection

    out: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT position >> 24 AS v, min(at_ns) AS lo,"
            " max(at_ns) AS hi FROM conduit_record_version GROUP BY 1) a"
            " JOIN (SELECT position >> 24 AS v, min(at_ns) AS lo FROM conduit_record_version"
            " GROUP BY 1) b ON b.v = a.v + 1 WHERE b.lo < a.hi"
        )
        if (backwards := cursor.fetchone()[0]) != 0:
            out.append(f"{backwards} versions begin before the one before them ends")
        cursor.execute(
            "SELECT count(*) FROM conduit_record_version v WHERE v.event_seq <> 0"
            " AND NOT EXISTS (SELECT 1 FROM conduit_event e WHERE e.seq = v.event_seq)"
        )
        if (lost := cursor.fetchone()[0]) != 0:
            out.append(f"{lost} log rows name a cause no Event has")
        cursor.execute(
            "SELECT work_id FROM conduit_record_version WHERE work_id LIKE %s"
            " GROUP BY work_id ORDER BY work_id LIMIT %s",
            ["%-c0001", COMPARED],
        )
        copies = [row[0] for row in cursor.fetchall()]

        def versions(work_id: str) -> list[int]:
            cursor.execute(
                "SELECT position >> 24 FROM conduit_record_version"
                " WHERE work_id = %s AND NOT (work_id = '') ORDER BY position",
                [work_id],
            )
            return [row[0] for row in cursor.fetchall()]

        pairs = [(copy[: -len("-c0001")], copy) for copy in copies]
        lined_up = [(seed, copy, versions(seed), versions(copy)) for seed, copy in pairs]
    if not copies:
        out.append("no copied Work has log rows")
    from storage import view

    last = view(store, None, lambda tx: max(tx.store_version(), 0))
    for seed, copy, seed_versions, copy_versions in lined_up:
        if len(seed_versions) != len(copy_versions):
            out.append(f"{copy} has {len(copy_versions)} log rows, {seed} {len(seed_versions)}")
            continue
        if copy_versions and copy_versions[-1] > last:
            out.append(f"{copy} has a row past the store's version {last}")
        for a, b in zip(seed_versions, copy_versions, strict=True):
            for back in (1, 0):  # before the transaction, and once it committed
                then, copied = _shape(store, seed, a - back), _shape(store, copy, b - back)
                if then != copied:
                    out.append(f"{copy} as of v{b - back} is {copied}, {seed} {then}")
    return out


def _shape(store: Store, work_id: str, version: int) -> tuple[object, ...]:
    """What a Work as of a version shows that a copy keeps: its state and revision,
    its attempts' states, its Waits' and Timers' count."""
    from storage import view

    then = view(store, None, lambda tx: tx.work_as_of(work_id, version))
    if then.work is None:
        return ()
    return (
        then.work.state,
        then.work.revision,
        tuple(x.state for x in then.executions),
        len(then.waits),
        len(then.timers),
    )


if __name__ == "__main__":
    import django

    django.setup()
    sys.stdout.write(json.dumps(problems()) + "\n")
