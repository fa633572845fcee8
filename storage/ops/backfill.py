"""Startup backfills: fill metadata that records written before it existed lack.

The console and every runtime call these when they start (``manage.py backfill``),
before serving: ``backfill_event_scopes`` gives Events accepted before record format 4
(or accepted by storage on its own) the Scope of the Work they resolve to, and
``backfill_executors`` gives attempts registered before ``Execution.executor`` was kept
the executor their own pinned binding names. Both are pure functions of a control-plane
Tx, change nothing they cannot derive, and are idempotent: a second run finds nothing
to do and returns 0.

``run_backfills`` drives both over a Store in short batches, so a large database never
holds the write lock for long.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial

from ..api import Store, Tx
from ..errors import NotFound
from ..readonly import view
from ..records import Execution, Guard, StoredEvent

DEFAULT_BATCH = 500


def resolved_work_scope(tx: Tx, stored: StoredEvent) -> str:
    """The Scope of the Work an Event resolves to, or "".

    The Work is the first that exists of: the Work the envelope names
    (``event.work_id``), the Work the routing checkpoint records, the Work that owns the
    Event's first correlation key. That one Work decides: an Event naming a Work
    without a scope stays without one, even if it was routed elsewhere.
    """
    event = stored.event
    candidates = [event.work_id, stored.route.work_id if stored.route else ""]
    for work_id in candidates:
        if work_id:
            try:
                return tx.work(work_id).scope_id
            except NotFound:
                continue
    if event.keys:
        try:
            return tx.work_by_key(event.keys[0]).scope_id
        except NotFound:
            return ""
    return ""


def _fill_event_scopes(tx: Tx, after: int, limit: int) -> tuple[int, int, int]:
    """One page of Events without a recorded scope: (filled, last sequence, seen)."""
    page = tx.scope_events([""], after=after, limit=limit)
    filled = 0
    for stored in page:
        scope_id = resolved_work_scope(tx, stored)
        if not scope_id:
            continue
        try:
            tx.set_event_scope(stored.id, scope_id)
        except NotFound:
            # The Work names a Scope that does not exist (only possible in data written
            # outside the contract); leave the Event as it is rather than invent one.
            continue
        filled += 1
    return filled, page[-1].sequence if page else after, len(page)


def backfill_event_scopes(tx: Tx, *, after: int = 0, limit: int = 0) -> int:
    """Record a scope for every Event that has none (``scope_events([""])``), taken from
    the Work it resolves to (see ``resolved_work_scope``) when that Work has a scope;
    other Events are left untouched. ``after``/``limit`` select one page of those
    Events by acceptance sequence (0 = all). Returns how many Events were filled."""
    return _fill_event_scopes(tx, after, limit)[0]


def _binding_executor(x: Execution) -> str:
    """The executor to record on ``x``, or "" when it has one or its binding names none."""
    if x.executor or x.binding is None:
        return ""
    return x.binding.executor


def backfill_executors(tx: Tx, *, execution_ids: Collection[str] | None = None) -> int:
    """Give every attempt with an empty executor whose pinned binding names one that
    executor, through the write-once ``set_execution_executor`` (which also keeps the
    Work's ``latest_executor`` when the attempt is its latest). ``execution_ids``
    restricts the pass to those attempts. Returns how many attempts were filled."""
    attempts = (
        tx.executions_without_executor()
        if execution_ids is None
        else map(tx.execution, execution_ids)
    )
    filled = 0
    for x in attempts:
        executor = _binding_executor(x)
        if executor:
            tx.set_execution_executor(x.id, executor)
            filled += 1
    return filled


@dataclass(frozen=True, slots=True)
class BackfillReport:
    event_scopes: int
    executors: int
    transactions: int


def _batch(
    tx: Tx, *, after: int, limit: int, events_done: bool, attempts: list[str]
) -> tuple[int, int, int, int]:
    """One transaction: a page of Events and a chunk of attempts.
    Returns (scopes filled, event cursor, Events seen, executors filled)."""
    filled, after, seen = (0, after, 0) if events_done else _fill_event_scopes(tx, after, limit)
    executors = backfill_executors(tx, execution_ids=attempts) if attempts else 0
    return filled, after, seen, executors


def run_backfills(
    store: Store,
    *,
    batch: int = DEFAULT_BATCH,
    progress: Callable[[str], None] | None = None,
) -> BackfillReport:
    """Run both backfills over ``store`` in control-plane transactions, each taking at
    most ``batch`` Events and ``batch`` attempts (a small database needs one). Safe
    while other writers commit: each transaction re-reads what it changes, and Events
    and attempts written meanwhile are already complete."""
    if batch <= 0:
        raise ValueError(f"batch must be positive, not {batch}")
    # Candidates come from Views (no write lock), a page of attempts without an
    # executor at a time (an index of those alone: a store whose attempts all have
    # one reads none); each transaction checks them again.
    page, unscoped = view(
        store, None, lambda tx: (_candidates(tx, "", batch), bool(tx.scope_events([""], limit=1)))
    )
    if not page.ids and not page.more and not unscoped:
        # Nothing to fill: no transaction at all, so a store that is up to date pays
        # two index reads at startup and its clock is not moved.
        return BackfillReport(0, 0, 0)
    found = len(page.ids)
    scopes = executors = transactions = after = 0
    events_done = False
    while not events_done or page.ids or page.more:
        if page.ids or not events_done:  # a page of attempts none of which gets one: no tx
            filled, after, seen, fixed = store.transact(
                Guard(),
                partial(
                    _batch, after=after, limit=batch, events_done=events_done, attempts=page.ids
                ),
            )
            transactions += 1
            scopes += filled
            executors += fixed
            # Events left untouched stay in scope_events([""]): the cursor moves past them.
            events_done = events_done or seen < batch
        if page.more:
            page = view(store, None, partial(_candidates, after=page.last, limit=batch))
            found += len(page.ids)
        else:
            page = _Candidates([], "", False)
        if progress is not None:
            progress(
                f"event scopes: {scopes} filled (through sequence {after}); "
                f"executors: {executors} filled of {found} candidates so far"
            )
    return BackfillReport(scopes, executors, transactions)


@dataclass(frozen=True, slots=True)
class _Candidates:
    ids: list[str]  # attempts to give their binding's executor
    last: str  # the last attempt ID read (the next page starts after it)
    more: bool  # whether the page was full, so another may follow


def _candidates(tx: Tx, after: str, limit: int) -> _Candidates:
    """One page of attempts without an executor, and which of them get one."""
    read = tx.executions_without_executor(after, limit)
    ids = [x.id for x in read if _binding_executor(x)]
    return _Candidates(ids, read[-1].id if read else after, len(read) == limit)
