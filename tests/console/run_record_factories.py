"""Run records for console tests, saved through the run store's Sessions (never the ORM).

The records come from the simulator's graph builders (``demo.graphs``), so the pages
are tested on the same shapes ``make run`` shows: a checkout with a child graph and
skips, a payment under Retry, a feed with a stream, messages and managed state.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import replace

from demo import graphs
from demo.graphs import Plan
from storage import NotFound
from storage.default import default_run_store
from storage.run_records import DurableRunRecord


def save(record: DurableRunRecord) -> DurableRunRecord:
    """Save ``record`` as the run's next revision; returns it as stored."""
    with default_run_store().acquire(record.run_id) as session:
        try:
            current = session.load().revision
        except NotFound:
            current = 0
        revision = session.save(record, current)
    return replace(record, revision=revision)


def steps(run_id: str, plan: Plan, seed: int = 1) -> Iterator[DurableRunRecord]:
    """Every record a run of ``plan`` saves, first to last (not saved)."""
    rng = random.Random(seed)  # noqa: S311 - test data
    ids = random.Random(f"{seed}/ids")  # noqa: S311

    def new_id() -> str:
        return f"{ids.getrandbits(128):032x}"

    record: DurableRunRecord | None = graphs.new_record(run_id, plan, {"run": run_id}, new_id)
    while record is not None:
        yield record
        record = graphs.advance(record, plan, rng, new_id)


def until(
    run_id: str, plan: Plan, done: Callable[[DurableRunRecord], bool] | None = None
) -> DurableRunRecord:
    """The first record of the run for which ``done`` holds (the last one by default)."""
    last = None
    for record in steps(run_id, plan):
        last = record
        if done is not None and done(record):
            return record
    assert done is None, "the run never reached that state"
    assert last is not None
    return last


def checkout(run_id: str = "checkout/1") -> DurableRunRecord:
    return save(until(run_id, Plan("checkout")))


def payment(run_id: str = "payment/1", failures: int = 2) -> DurableRunRecord:
    return save(until(run_id, Plan("payment", failures=failures)))


def sparse_feed(run_id: str = "feed/1") -> DurableRunRecord:
    """A feed run at a save where a message is acknowledged above the frontier."""

    def sparse(record: DurableRunRecord) -> bool:
        return any(p.acked for s in record.streams.values() for p in s.pending)

    return save(until(run_id, Plan("feed", messages=7, poison=2), sparse))
