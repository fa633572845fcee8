"""The meaning of the dashboard reads over plain lists: time series of Work, Events
and attempts, and exhausted Work.

The reference double answers with these functions; the SQL backend must agree with
them (the contract tests in tests/storage/contract/test_series.py and the differential test).

- ``work_series``: Work matching a WorkQuery's filters (its order, cursor and limit
  play no part), counted per state by the bucket its ``updated_at`` falls in. A
  terminal Work never changes again, so for completed, failed and cancelled that is
  the bucket in which it ended; for a live state it is the last change.
- ``event_series``: Events by the bucket of their acceptance time (``received_at``).
- ``attempt_series``: attempts by the bucket of their first claim (``started_at``; an
  attempt never claimed has none and counts nowhere).
- ``select_started``: the attempts behind an ``attempt_series`` bucket, the most
  recently started first (ties by ID, descending).
- ``select_running``: the running attempts, the longest running first (by
  ``started_at``, ties by ID); ``select_expired``: the running attempts whose lease
  expired by an instant, the oldest expiry first; ``select_overdue``: the Timers due by
  an instant, the earliest first (ties by ID). A Timer serving no Work has Scope "".
- ``select_exhausted``: ready Work that has had an attempt, has no live attempt and
  no Timer: nothing will run it again until an operator retries it.

``scope_ids`` (None: any) selects Events by their recorded Scope and attempts by
their Work's Scope; "" stands for "no Scope".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import Invalid
from ..records import (
    MAX_BUCKETS,
    Buckets,
    Execution,
    ExecutionState,
    Nanos,
    StoredEvent,
    Timer,
    Work,
    WorkQuery,
    WorkState,
)
from .query import check_query, matches, select_works


def check_buckets(buckets: Buckets) -> None:
    if buckets.width <= 0:
        raise Invalid(f"a bucket width must be positive, not {buckets.width}")
    if not 1 <= buckets.count <= MAX_BUCKETS:
        raise Invalid(f"a series has 1 to {MAX_BUCKETS} buckets, not {buckets.count}")
    if buckets.start < 0:
        raise Invalid("a series starts at a nonnegative time")


def check_scope_ids(scope_ids: Sequence[str] | None) -> None:
    if isinstance(scope_ids, str):
        raise Invalid("scope_ids takes a sequence of Scope IDs, not a string")


def _in_scopes(scope_ids: Sequence[str] | None, work_id: str, scope_of: Mapping[str, str]) -> bool:
    """Whether a record of ``work_id`` is in the selection (``None``: every Scope)."""
    return scope_ids is None or scope_of.get(work_id, "") in scope_ids


def series_states(query: WorkQuery) -> list[WorkState]:
    """The states a Work series reports: the query's, else all of them."""
    return [s for s in WorkState if not query.states or s in query.states]


def work_series(query: WorkQuery, buckets: Buckets, works: Iterable[Work]) -> dict[str, list[int]]:
    check_query(query)
    check_buckets(buckets)
    out = {s.value: [0] * buckets.count for s in series_states(query)}
    for work in works:
        i = buckets.index(work.updated_at)
        if i is not None and matches(query, work):
            out[work.state.value][i] += 1
    return out


def event_series(
    buckets: Buckets, scope_ids: Sequence[str] | None, events: Iterable[StoredEvent]
) -> list[int]:
    check_buckets(buckets)
    check_scope_ids(scope_ids)
    counts = [0] * buckets.count
    for stored in events:
        i = buckets.index(stored.event.received_at)
        if i is not None and (scope_ids is None or stored.scope_id in scope_ids):
            counts[i] += 1
    return counts


def attempt_series(
    buckets: Buckets,
    scope_ids: Sequence[str] | None,
    executions: Iterable[Execution],
    scope_of: Mapping[str, str],
) -> list[int]:
    """``scope_of`` maps a Work ID to its Scope ID."""
    check_buckets(buckets)
    check_scope_ids(scope_ids)
    counts = [0] * buckets.count
    for x in executions:
        i = buckets.index(x.started_at) if x.started_at else None
        if i is not None and _in_scopes(scope_ids, x.work_id, scope_of):
            counts[i] += 1
    return counts


def select_started(
    since: Nanos,
    before: Nanos,
    scope_ids: Sequence[str] | None,
    limit: int,
    executions: Iterable[Execution],
    scope_of: Mapping[str, str],
) -> list[Execution]:
    check_scope_ids(scope_ids)
    chosen = sorted(
        (
            x
            for x in executions
            if x.started_at
            and since <= x.started_at < before
            and _in_scopes(scope_ids, x.work_id, scope_of)
        ),
        key=lambda x: (x.started_at, x.id),
        reverse=True,
    )
    return chosen[:limit] if limit else chosen


def select_running(
    scope_ids: Sequence[str] | None,
    limit: int,
    executions: Iterable[Execution],
    scope_of: Mapping[str, str],
) -> list[Execution]:
    check_scope_ids(scope_ids)
    chosen = sorted(
        (
            x
            for x in executions
            if x.state is ExecutionState.RUNNING and _in_scopes(scope_ids, x.work_id, scope_of)
        ),
        key=lambda x: (x.started_at, x.id),
    )
    return chosen[:limit] if limit else chosen


def select_expired(
    at: Nanos,
    scope_ids: Sequence[str] | None,
    executions: Iterable[Execution],
    scope_of: Mapping[str, str],
) -> list[Execution]:
    check_scope_ids(scope_ids)
    return sorted(
        (
            x
            for x in executions
            if x.state is ExecutionState.RUNNING
            and x.lease_expires_at <= at
            and _in_scopes(scope_ids, x.work_id, scope_of)
        ),
        key=lambda x: (x.lease_expires_at, x.id),
    )


def select_overdue(
    at: Nanos, scope_ids: Sequence[str] | None, timers: Iterable[Timer], scope_of: Mapping[str, str]
) -> list[Timer]:
    check_scope_ids(scope_ids)
    return sorted(
        (t for t in timers if t.fire_at <= at and _in_scopes(scope_ids, t.work_id, scope_of)),
        key=lambda t: (t.fire_at, t.id),
    )


def select_exhausted(
    query: WorkQuery,
    works: Iterable[Work],
    executions: Iterable[Execution],
    timers: Iterable[Timer],
) -> list[Work]:
    """The exhausted Work among ``query``'s, in its order, paged and limited by it."""
    check_query(query)
    attempted: set[str] = set()
    live: set[str] = set()
    for x in executions:
        attempted.add(x.work_id)
        if not x.terminal:
            live.add(x.work_id)
    timed = {t.work_id for t in timers if t.work_id}
    candidates = [
        w
        for w in works
        if w.state is WorkState.READY
        and w.id in attempted
        and w.id not in live
        and w.id not in timed
    ]
    return select_works(query, candidates)
