"""Benchmark 11: the store's past (issue 32), the pages that read the record-version
log, on the small and the large realistic history, on SQLite and on PostgreSQL.

The histories' log is real where the seed's is (``generate`` writes through the
storage API) and copied with every cloned Work (``bench.version_log``), so the large
history's log holds about a hundred times the small one's rows. In each copy of a
history the child first plays ``JOURNEYS`` Work through a life an operator would
open in the past (the browser journey's, ``tests/console/browser/
test_browser_history.py``): three attempts that fail, the third after parking on a
Wait, an operator's retry, a fourth attempt that writes a KV key and completes, each
step its own transaction. Then, in-process with ``django.test.Client`` as a signed-in
superuser, pages interleaved, one warm-up round:

- the Work page as of the Event three attempts ago (``#<sequence>``), and now;
- the Work's changes over its life (``/changes/<id>``);
- a history Work as of its first version (a Work the seed wrote, cloned in the large
  history: its rows sit among a hundred times as many);
- the store's changes since ``ROWS_BACK`` log rows ago, first page (``/changes``);
- the dashboard's counts as of that moment (the tally now less ``ROWS_BACK`` rows'
  changes), and now;
- the KV inspector as of the journey's first attempt, and now.

The same moments at both sizes: the journeys are the newest history in both, and the
``ROWS_BACK`` moment is counted in log rows, so the pages have the same rows to read
and only the store around them grows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlencode

from .config import Sizes
from .inproc import get_ok
from .pg import Postgres, on_both_engines
from .proc import DataDir, Workspace
from .report import Section, Target, ms, ratio, table
from .stats import Spread, rounds

JOURNEYS = 3
ROWS_BACK = 20_000  # the store-wide moment: this many log rows before the newest
NAMESPACE = "bench.past"
GOAL = 1.3  # issue 35's flatness: a page at 1M within 1.3x its 10k time
PAGES = (
    ("work_as_of", "Work page as of an Event three attempts ago", "work_now"),
    ("work_changes", "The Work's changes over its life", "work_now"),
    ("history_work_as_of", "A history Work as of its first version", "history_work_now"),
    ("store_changes", f"The store's changes since {ROWS_BACK:,} log rows ago", ""),
    ("dashboard_as_of", f"Dashboard as of {ROWS_BACK:,} log rows ago", "dashboard_now"),
    ("kv_as_of", "KV inspector as of the first attempt", "kv_now"),
)


def journey(n: int) -> dict[str, Any]:
    """(child) One Work through the life the benchmark opens in the past; returns its
    ID, the sequence of the Event of its first failure, and the version before its
    first attempt's KV write."""
    import json

    from storage import (
        Binding,
        Event,
        Execution,
        ExecutionState,
        Guard,
        Outcome,
        OutcomeKind,
        Payload,
        Tx,
        Wait,
        WaitState,
        Work,
        WorkState,
    )
    from storage.default import default_store
    from storage.ops import manual

    store = default_store()
    work_id = f"bench-past/{time.time_ns()}/{n}"

    def transact[T](fn: Callable[[Tx], T]) -> T:
        return store.transact(Guard(), fn)

    def attempt(tx: Tx) -> Execution:
        x = Execution(
            id=f"{work_id}-x{len(tx.executions(work_id)) + 1}",
            work_id=work_id,
            attempt=len(tx.executions(work_id)) + 1,
            executor="python",
            binding=Binding(name="python", executor="python"),
        )
        tx.put_execution(x)
        tx.kv_put(NAMESPACE, f"{work_id}/attempt", str(x.attempt).encode())
        return tx.claim(x.id, "bench-worker", tx.now + 30 * 10**9)

    def end(x: Execution, state: ExecutionState, work: WorkState, message: str) -> None:
        kind = OutcomeKind.FAILED if state == ExecutionState.FAILED else OutcomeKind.COMPLETED

        def run(tx: Tx) -> None:
            tx.put_execution(
                replace(tx.execution(x.id), state=state, outcome=Outcome(kind, message))
            )
            tx.put_work(replace(tx.work(work_id), state=work))

        transact(run)

    def event(name: str, type: str) -> int:
        def run(tx: Tx) -> int:
            body = Payload("bench.past", json.dumps({"step": name}).encode())
            tx.accept_event(
                Event(
                    f"{work_id}/{name}",
                    "bench",
                    f"{work_id}/{name}",
                    type,
                    work_id=work_id,
                    payload=body,
                )
            )
            return tx.event(f"{work_id}/{name}").sequence

        return transact(run)

    transact(lambda tx: tx.put_work(Work(id=work_id, kind="bench.past", scope_id="")))
    first_write = transact(lambda tx: tx.store_version())
    sequences = []
    for i in (1, 2):
        x = transact(attempt)
        end(x, ExecutionState.FAILED, WorkState.READY, f"declined {i}")
        sequences.append(event(f"declined-{i}", "charge.declined"))
    x3 = transact(attempt)

    def park(tx: Tx) -> None:
        waiting = Outcome(OutcomeKind.WAITING)
        tx.put_execution(replace(tx.execution(x3.id), state=ExecutionState.PARKED, outcome=waiting))
        tx.put_work(replace(tx.work(work_id), state=WorkState.WAITING))
        tx.put_wait(
            Wait(
                id=f"{work_id}/approval",
                work_id=work_id,
                execution_id=x3.id,
                types=("approval.granted",),
                description="waiting for the bank's approval",
            )
        )

    transact(park)

    def woken(tx: Tx) -> None:
        wait = tx.wait(f"{work_id}/approval")
        tx.accept_event(
            Event(
                f"{work_id}/approval",
                "bank",
                f"{work_id}/approval",
                "approval.granted",
                work_id=work_id,
            )
        )
        tx.put_wait(replace(wait, state=WaitState.WOKEN, woken_by=f"{work_id}/approval"))

    transact(woken)
    end(x3, ExecutionState.FAILED, WorkState.READY, "declined 3")
    stored, _ = store.transact(
        Guard(),
        lambda tx: manual.record(
            tx, manual.Action.RETRY, "alice", work_id, "bank said yes", f"bench-{n}"
        ),
    )
    manual.do_apply_manual_event(store, stored.id)
    x4 = max(transact(lambda tx: tx.executions(work_id)), key=lambda x: x.attempt)

    def claim(tx: Tx) -> None:
        tx.claim(x4.id, "bench-worker", tx.now + 30 * 10**9)
        tx.kv_put(NAMESPACE, f"{work_id}/attempt", str(x4.attempt).encode())

    transact(claim)
    end(x4, ExecutionState.COMPLETED, WorkState.COMPLETED, "")
    return {"id": work_id, "sequence": sequences[0], "first_write": first_write}


def _rows_back(rows: int) -> tuple[int, int]:
    """(child) The version ``rows`` log rows before the newest (plain SQL on the log's
    key), and the log's row count."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT position FROM conduit_record_version ORDER BY position DESC LIMIT 1 OFFSET %s",
            [rows],
        )
        found = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM conduit_record_version")
        total = int(cursor.fetchone()[0])
    return (int(found[0]) >> 24 if found else 0), total


def _history_work() -> tuple[str, int]:
    """(child) The seed's Work with the most log rows, and its first row's version:
    a Work every history has under the same ID."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT work_id, count(*), min(position) FROM conduit_record_version"
            " WHERE NOT (work_id = '') AND work_id NOT LIKE %s AND work_id NOT LIKE %s"
            " GROUP BY work_id ORDER BY count(*) DESC, work_id LIMIT 1",
            ["%-c____", "bench-past/%"],  # a clone's suffix (bench.history), a journey
        )
        work_id, _count, first = cursor.fetchone()
    return str(work_id), int(first) >> 24


def measure(reps: int) -> dict[str, Any]:
    """(child) Seconds per GET of each page, the moments it named, and the log's size."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    journeys = [journey(n) for n in range(JOURNEYS)]
    work = journeys[-1]
    back, logged = _rows_back(ROWS_BACK)
    history_work, history_version = _history_work()
    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pass")
    client = Client()
    client.force_login(user)
    work_url = f"/works/{quote(work['id'], safe='/')}"
    history_url = f"/works/{quote(history_work, safe='/')}"
    kv = {"namespace": NAMESPACE, "prefix": work["id"]}
    first_attempt = f"v{work['first_write'] + 1}"
    pages = {
        "work_as_of": f"{work_url}?{urlencode({'as_of': '#' + str(work['sequence'])})}",
        "work_now": work_url,
        "work_changes": f"/changes/{quote(work['id'], safe='/')}?from=v{work['first_write'] - 1}",
        "history_work_as_of": f"{history_url}?as_of=v{history_version}",
        "history_work_now": history_url,
        "store_changes": f"/changes?from=v{back}",
        "dashboard_as_of": f"/dashboard?as_of=v{back}",
        "dashboard_now": "/dashboard",
        "kv_as_of": f"/kv?{urlencode({**kv, 'as_of': first_attempt})}",
        "kv_now": f"/kv?{urlencode(kv)}",
    }
    calls = {name: lambda url=url: get_ok(client, url) for name, url in pages.items()}
    return {"pages": pages, "times": rounds(calls, reps), "logged": logged}


def run(ws: Workspace, histories: dict[str, DataDir], sizes: Sizes, pg: Postgres | None) -> Section:
    engines = ["SQLite"] + (["PostgreSQL"] if pg is not None else [])
    works = {"small": sizes.small, "large": sizes.large}
    results = on_both_engines(
        ws,
        histories,
        works,
        pg,
        "benchmark 11: the past's pages",
        "past.measure",
        reps=sizes.page_reps,
    )
    section = Section(
        "11",
        "The store's past: pages as of a moment",
        "The realistic histories of benchmark 3, whose record-version log is the seed's "
        "own (written through the storage API by `generate`) and a copy of it for every "
        "cloned Work (`bench/version_log.py`), on SQLite and on a PostgreSQL copy. In "
        f"each copy of a history the child first plays {JOURNEYS} Work through the life "
        "the browser journey opens in the past (two attempts that fail, a third that "
        "parks on a Wait, is woken and fails, an operator's retry, a fourth attempt that "
        "writes a KV key and completes; each step its own transaction), so the newest "
        "history is the same at both sizes. Then, in-process with `django.test.Client` "
        "as a signed-in superuser, DEBUG off, pages interleaved after one warm-up "
        f"round, {sizes.page_reps} requests each: the last journey's Work as of the "
        "Event three attempts before its last (`#<sequence>`) and its changes over its "
        "life; a Work the seed wrote, as of its first version (its rows among a hundred "
        f"times as many at {sizes.large:,}); the store's changes (first page) and the "
        f"dashboard's counts as of {ROWS_BACK:,} log rows before the newest (the same "
        "rows to read at both sizes); the KV inspector as of the journey's first "
        "attempt. Each beside the same page now, in the same rounds. The goal is issue "
        f"35's for every page: at {sizes.large:,} Work within {GOAL}x its time at "
        f"{sizes.small:,}.",
    )
    for engine in engines:
        small, large = results[(engine, "small")], results[(engine, "large")]
        t0 = {k: Spread.of(v) for k, v in small["times"].items()}
        t1 = {k: Spread.of(v) for k, v in large["times"].items()}
        rows = []
        for name, title, now in PAGES:
            growth = t1[name].median / t0[name].median
            present = ms(t1[now]) if now else "-"
            beside = ratio(t1[name].median / t1[now].median) if now else "-"
            rows.append([title, ms(t0[name]), ms(t1[name]), ratio(growth), present, beside])
            section.targets.append(
                Target(
                    f"{engine}: {title}, {sizes.large:,}/{sizes.small:,} Work",
                    ratio(growth),
                    f"<= {GOAL}x",
                    growth <= GOAL,
                )
            )
        section.add(
            f"{engine}: the log holds {small['logged']:,} rows at {sizes.small:,} Work and "
            f"{large['logged']:,} at {sizes.large:,}."
        )
        section.add(
            table(
                [
                    "Page",
                    f"{sizes.small:,} Work",
                    f"{sizes.large:,} Work",
                    "Growth",
                    f"The page now, at {sizes.large:,}",
                    "Past / now",
                ],
                rows,
            )
        )
    p = results[("SQLite", "large")]["pages"]
    section.add("URLs at the large size: " + ", ".join(f"`{u}`" for u in p.values()) + ".")
    return section
