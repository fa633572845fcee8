"""Benchmark 7: the triage pages (the exhausted Work list, the Errors page) and a bulk
retry of 1,000 exhausted Work, against the plain Work list in the same run, on both
histories.

In-process with django.test.Client as a signed-in superuser, like benchmark 3, on
its realistic histories (``history.amplify(proportional=True)``): the live set, and
so the exhausted Work among it, grows in proportion, as do the failed Work the
Errors page groups; the ratios against the Work list on the same history say
whether each page costs more than the list it narrows. The bulk retry adds its own exhausted Work
(one transaction per 250, through the storage API, as a runtime would leave them)
and times the confirmation (GET) and the action (POST, every Work its own manual
Event) of one run at the real cap.
"""

from __future__ import annotations

import re
import time
from typing import Any

from .config import Sizes
from .inproc import get_ok
from .proc import DataDir, Workspace, child, log
from .report import Section, Target, ms, ratio, table
from .stats import Spread, rounds

BATCH = 250


def _exhausted_batch(prefix: str, n: int) -> None:
    """``n`` new exhausted Work (created, attempted, failed, left without a Timer)."""
    from dataclasses import replace

    from storage import (
        Execution,
        ExecutionState,
        Guard,
        Outcome,
        OutcomeKind,
        Tx,
        Work,
        WorkState,
        seconds,
    )
    from storage.default import default_store

    store = default_store()
    for start in range(0, n, BATCH):

        def run(tx: Tx, start: int = start) -> None:
            for i in range(start, min(start + BATCH, n)):
                w = tx.put_work(Work(id=f"{prefix}-{i:05d}", kind="bench.triage"))
                x = tx.put_execution(Execution(id=f"{w.id}-x1", work_id=w.id, attempt=1))
                x = tx.claim(x.id, "bench", tx.now + seconds(30))
                failure = Outcome(OutcomeKind.FAILED, f"upstream 503 for order {i}")
                tx.put_execution(replace(x, state=ExecutionState.FAILED, outcome=failure))
                tx.put_work(replace(tx.work(w.id), state=WorkState.READY))

        store.transact(Guard(), run)


def measure(reps: int, bulk: int) -> dict[str, Any]:
    """(child) Seconds per request of each page, and of one bulk retry run of ``bulk``
    exhausted Work (its confirmation and its action), fresh Work each repetition."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from storage import WorkQuery, WorkState, view
    from storage.default import default_store

    store = default_store()
    failed = frozenset({WorkState.FAILED})

    def sizes(tx: Any) -> dict[str, int]:
        return {
            "works": tx.count_works(WorkQuery()),
            "exhausted": tx.count_exhausted(WorkQuery()),
            "failed": tx.count_works(WorkQuery(states=failed)),
            "groups": len(tx.error_groups(WorkQuery())),
        }

    counts = view(store, None, sizes)
    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pass")
    client = Client()
    client.force_login(user)
    pages = {"list": "/", "exhausted": "/?is=exhausted&sort=updated", "errors": "/errors"}

    calls = {name: lambda url=url: get_ok(client, url) for name, url in pages.items()}
    times = rounds(calls, reps) | {"confirm": [], "retry": []}
    done = 0
    for rep in range(max(2, reps // 2)):
        _exhausted_batch(f"bench-retry-{rep}", bulk)
        url = "/actions/bulk?is=exhausted&error=upstream+%3Cn%3E+for+order+%3Cn%3E&do=retry-all"
        started = time.perf_counter()
        html = get_ok(client, url).decode()
        confirm = time.perf_counter() - started
        through = re.search(r'name="through" value="([^"]+)"', html)
        token = re.search(r'name="token" value="([^"]+)"', html)
        if through is None or token is None:
            raise RuntimeError("the bulk confirmation has no run to confirm")
        form = {
            "do": "retry-all",
            "is": "exhausted",
            "error": "upstream <n> for order <n>",
            "through": through.group(1),
            "token": token.group(1),
            "reason": "benchmark",
        }
        started = time.perf_counter()
        response = client.post("/actions/bulk", form)
        retry = time.perf_counter() - started
        summary = re.search(r"Retry: ([\d,]+) done", response.content.decode())
        if response.status_code != 200 or summary is None:
            raise RuntimeError(f"POST /actions/bulk: {response.status_code}")
        done = int(summary.group(1).replace(",", ""))
        times["confirm"].append(confirm)
        times["retry"].append(retry)
    return {"pages": pages, "times": times, "counts": counts, "done": done}


def run(ws: Workspace, histories: dict[str, DataDir], sizes: Sizes) -> Section:
    results: dict[str, dict[str, Any]] = {}
    for key, data in histories.items():
        works = sizes.small if key == "small" else sizes.large
        log(f"benchmark 7: triage pages and a {sizes.bulk:,}-Work bulk retry at {works:,} Work")
        copy = ws.copy_of(data, f"triage-{key}")
        results[key] = child(copy, "triage.measure", reps=sizes.page_reps, bulk=sizes.bulk)
        ws.discard(copy)
    section = Section(
        "7",
        "Triage: exhausted Work, error groups, bulk retry",
        "Both realistic histories (benchmark 3's). Server time in-process with "
        "`django.test.Client` as a signed-in superuser, as in benchmark 3, DEBUG off. "
        "Each page against the plain Work list "
        "(`/`) measured in the same child, interleaved: "
        f"{sizes.page_reps} requests per page after one warm-up round. The bulk retry: "
        f"{sizes.bulk:,} fresh exhausted Work in one error group (written through the "
        "storage API, 250 a transaction), then the confirmation of `Retry all exhausted` "
        "over that group (GET) and the action (POST: one manual Event and one new attempt "
        "per Work, in batches), repeated with new Work.",
    )
    rows = []
    for r in results.values():
        t = {k: Spread.of(v) for k, v in r["times"].items()}
        c = r["counts"]
        base = t["list"].median
        rows.append(
            [
                f"{c['works']:,}",
                ms(t["list"]),
                f"{ms(t['exhausted'])}, {ratio(t['exhausted'].median / base)}",
                f"{ms(t['errors'])}, {ratio(t['errors'].median / base)}",
                f"{ms(t['confirm'])}, {ratio(t['confirm'].median / base)}",
                f"{ms(t['retry'])}, {ratio(t['retry'].median / base)}",
                f"{c['exhausted']:,} / {c['failed']:,} / {c['groups']:,}",
            ]
        )
        if r["done"] != sizes.bulk:
            raise RuntimeError(f"the bulk retry did {r['done']} of {sizes.bulk}")
    section.add(
        table(
            [
                "Work",
                "Work list `/`",
                "Exhausted list `/?is=exhausted`",
                "Errors `/errors`",
                f"Bulk retry confirmation ({sizes.bulk:,})",
                f"Bulk retry action ({sizes.bulk:,})",
                "Exhausted / failed / groups",
            ],
            rows,
        )
    )
    large = results.get("large")
    if large is not None:
        t = {k: Spread.of(v) for k, v in large["times"].items()}
        cost = t["exhausted"].median / t["list"].median
        section.targets.append(
            Target(
                f"Exhausted list at {sizes.large:,} Work vs the Work list",
                ratio(cost),
                "<= 1.00x",
                cost <= 1.0,
            )
        )
        per_work = t["retry"].median / sizes.bulk
        section.targets.append(
            Target(
                f"Bulk retry of {sizes.bulk:,} exhausted Work at {sizes.large:,} Work",
                f"{t['retry'].median:.1f} s ({per_work * 1000:.1f} ms a Work)",
                "<= 30 s",
                t["retry"].median <= 30,
            )
        )
    return section
