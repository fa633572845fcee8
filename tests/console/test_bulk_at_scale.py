"""Bulk retry at its real cap (10,000 eligible Work, not shrunk) on the real backend:
the confirmation, the POST with its progress record, the summary and "the rest"; and
what it costs other writers: every transaction stays short and a single write made
meanwhile is not held up for long (SQLite serialises writers; the bulk action yields
the write lock after each of its transactions)."""

from __future__ import annotations

import re
import statistics
import threading
import time

import pytest
from django.db import connections

import storage
from console.actions import work as actions
from console.actions.work import read_progress
from console.operate import bulk
from storage import Guard, Work
from storage.default import default_store
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.bulk import confirmed, eligible_rows

pytestmark = [DB, pytest.mark.slow]

CAP = 10_000
EXTRA = 50  # eligible Work beyond the cap: "the rest"


class TimedStore:
    """The real store, timing each transaction it runs (for the measurement only)."""

    def __init__(self, store: storage.Store) -> None:
        self.store = store
        self.seconds: list[float] = []

    def transact(self, guard, fn):
        began = time.perf_counter()
        try:
            return self.store.transact(guard, fn)
        finally:
            self.seconds.append(time.perf_counter() - began)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_retry_all_at_the_real_cap_keeps_transactions_short_and_shows_progress(
    as_alice, monkeypatch, capsys
):
    ids = [f"w{i:05d}" for i in range(CAP + EXTRA)]
    f.exhausted_many(ids)
    assert actions.BULK_CAP == CAP

    # The other writer below adds Work of another kind, which the filter leaves out.
    first = as_alice.get("/actions/bulk", {"do": "retry-all", "kind": f.KIND}).content.decode()
    assert "<h1>Retry 10,000 Work</h1>" in first
    assert eligible_rows(first) == ids[:500]
    assert "upstream returned 502 Bad Gateway" in first.split('id="eligible"')[1]
    assert "50 more to look at after it" in first
    form = {**confirmed(first), "reason": "provider back"}

    timed = TimedStore(default_store())
    monkeypatch.setattr(bulk, "default_store", lambda: timed)
    waits: list[float] = []
    seen: list[tuple[int, int]] = []
    finished = threading.Event()

    def other_writer() -> None:
        # Another writer (a runtime's single-Work transaction) every 20 ms meanwhile.
        n = 0
        while not finished.is_set():
            work = Work(f"c{n}", "sync.crm")
            began = time.perf_counter()
            default_store().transact(Guard(), lambda tx, w=work: tx.put_work(w))
            waits.append(time.perf_counter() - began)
            n += 1
            time.sleep(0.02)

    def poller() -> None:
        # What the confirmation's progress region reads, once a second.
        while not finished.is_set():
            state = storage.view(default_store(), None, lambda tx: read_progress(tx, form["token"]))
            if state is not None:
                seen.append((state.processed, state.total))
            time.sleep(1)

    threads = [threading.Thread(target=other_writer), threading.Thread(target=poller)]
    for t in threads:
        t.start()
    began = time.perf_counter()
    try:
        done = as_alice.post("/actions/bulk", form).content.decode()
    finally:
        finished.set()
        for t in threads:
            t.join()
    took = time.perf_counter() - began

    assert "Retry: 10,000 done, 0 skipped, 50 left" in done, re.search(r"<h1>.*?</h1>", done, re.S)
    assert any(0 < processed < total == CAP for processed, total in seen), seen
    longest, p99 = max(timed.seconds), statistics.quantiles(timed.seconds, n=100)[98]
    blocked, blocked_p99 = max(waits), statistics.quantiles(waits, n=100)[98]
    engine = connections["default"].display_name
    with capsys.disabled():
        print(  # noqa: T201 - the measurement is what this test reports
            f"\nbulk retry of {CAP:,} on {engine}: {took:.1f} s, {len(timed.seconds)} write "
            f"transactions, median {statistics.median(timed.seconds) * 1000:.0f} ms, p99 "
            f"{p99 * 1000:.0f} ms, longest {longest * 1000:.0f} ms; {len(waits)} concurrent "
            f"single writes: median {statistics.median(waits) * 1000:.0f} ms, p99 "
            f"{blocked_p99 * 1000:.0f} ms, longest {blocked * 1000:.0f} ms"
        )
    # Short transactions: each takes at most BULK_BATCH Work (a record and an apply
    # per batch, and the plan's claim and end), never the whole selection in one. How
    # long they take is benchmark 7's measure (bench/triage.py), not a bound here: a
    # median under 200 ms here failed on CI with the CPUs saturated (278 ms).
    assert len(timed.seconds) == 2 * (CAP // actions.BULK_BATCH) + 2
    # No starvation: a writer waits for about one of the bulk action's transactions,
    # not for a run of them (with 100 per transaction and no yield it waited up to 14 s
    # behind 150 ms transactions). Bounds relative to the transactions measured in
    # this run, so a loaded machine slows both sides alike.
    assert blocked_p99 <= 2 * p99 + 0.05
    assert blocked <= 2 * longest + 0.1
    assert storage.view(default_store(), None, lambda tx: read_progress(tx, form["token"])) is None

    rest = re.search(r'href="(/actions/bulk\?[^"]+)">Run again for the rest', done).group(1)
    second = as_alice.get(rest.replace("&amp;", "&")).content.decode()
    assert eligible_rows(second) == ids[CAP:]
    again = as_alice.post("/actions/bulk", {**confirmed(second), "reason": "provider back"})
    assert "Retry: 50 done, 0 skipped, 0 left" in again.content.decode()
    attempts = storage.view(default_store(), None, lambda tx: tx.latest_executions(ids))
    assert {x.attempt for x in attempts.values()} == {2}  # each retried exactly once
