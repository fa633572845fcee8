"""The meaning of a TimerQuery and an ActiveWaitQuery over plain lists (the console's
Timers and Waits pages).

The reference double answers with these functions; the SQL backend must agree with
them (tests/storage/contract/test_runtime_pages.py runs both, and walks every page).

Both are keyset pages over a total order of (time, ID), ascending: Timers by
``fire_at``, active Waits by ``created_at``. A bound keeps the rows whose time is at
or before it (``due_by``, ``created_by``). ``after`` keeps the rows strictly after a
key and returns the first ``limit``; ``before`` keeps those strictly before it and
returns the last ``limit``, in the same ascending order, so a "previous page" link is
one read too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import Invalid
from ..records import (
    ActiveWaitQuery,
    Buckets,
    Nanos,
    Timer,
    TimerKey,
    TimerQuery,
    Wait,
    WaitKey,
)

# What a database column holds: a cursor or bound outside it could not be bound.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _check_key(key: TimerKey | WaitKey | None, cls: type, time: str) -> None:
    if key is None:
        return
    if not isinstance(key, cls):
        raise Invalid(f"a page cursor here is a {cls.__name__}, not {type(key).__name__}")
    value, key_id = getattr(key, time), key.id
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _INT64_MAX:
        raise Invalid(f"a {cls.__name__}'s {time} is a 64-bit integer 0 or above, not {value!r}")
    if not isinstance(key_id, str):
        raise Invalid(f"a {cls.__name__}'s ID is a string, not {type(key_id).__name__}")


def _check_page(query: TimerQuery | ActiveWaitQuery, bound: str, key: type, time: str) -> None:
    limit = query.limit
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise Invalid(f"limit must be 0 (no limit) or positive, not {limit!r}")
    value = getattr(query, bound)
    if value is not None and (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not _INT64_MIN <= value <= _INT64_MAX
    ):
        raise Invalid(f"{type(query).__name__}.{bound} is an instant (64-bit integer ns) or None")
    if query.after is not None and query.before is not None:
        raise Invalid("a page is read after a cursor or before one, not both")
    _check_key(query.after, key, time)
    _check_key(query.before, key, time)


def check_timer_query(query: TimerQuery) -> None:
    """Invalid for a query no backend could answer the same way."""
    if not isinstance(query, TimerQuery):
        raise Invalid(f"query_timers takes a TimerQuery, not {type(query).__name__}")
    _check_page(query, "due_by", TimerKey, "fire_at")
    for name, what in (("scope_ids", "Scope IDs"), ("kinds", "Work kinds")):
        chosen = getattr(query, name)
        if chosen is not None and (
            not isinstance(chosen, frozenset) or not all(isinstance(s, str) for s in chosen)
        ):
            raise Invalid(f"TimerQuery.{name} takes a frozenset of {what} or None")


def check_wait_query(query: ActiveWaitQuery) -> None:
    """Invalid for a query no backend could answer the same way."""
    if not isinstance(query, ActiveWaitQuery):
        raise Invalid(f"query_active_waits takes an ActiveWaitQuery, not {type(query).__name__}")
    _check_page(query, "created_by", WaitKey, "created_at")


def _page[R](
    rows: Iterable[tuple[tuple[Nanos, str], R]],
    bound: Nanos | None,
    after: tuple[Nanos, str] | None,
    before: tuple[Nanos, str] | None,
    limit: int,
) -> list[R]:
    chosen = sorted(
        (
            (key, row)
            for key, row in rows
            if (bound is None or key[0] <= bound)
            and (after is None or key > after)
            and (before is None or key < before)
        ),
        key=lambda pair: pair[0],
    )
    if limit and before is not None:
        chosen = chosen[-limit:]
    elif limit:
        chosen = chosen[:limit]
    return [row for _, row in chosen]


def _key(key: TimerKey | WaitKey | None) -> tuple[Nanos, str] | None:
    if key is None:
        return None
    return (key.fire_at if isinstance(key, TimerKey) else key.created_at, key.id)


# Per Work ID, its Scope and kind: a Timer's are its Work's ("", "" without one).
WorkOf = Mapping[str, tuple[str, str]]


def _chosen(query: TimerQuery, timer: Timer, work_of: WorkOf) -> bool:
    """Whether ``timer``'s Work is in the query's Scopes and of one of its kinds."""
    scope, kind = work_of.get(timer.work_id, ("", ""))
    return (query.scope_ids is None or scope in query.scope_ids) and (
        query.kinds is None or kind in query.kinds
    )


def select_timers(query: TimerQuery, timers: Sequence[Timer], work_of: WorkOf) -> list[Timer]:
    """The page of ``timers`` (the live ones) ``query`` selects."""
    rows = (((t.fire_at, t.id), t) for t in timers if _chosen(query, t, work_of))
    return _page(rows, query.due_by, _key(query.after), _key(query.before), query.limit)


def count_timers(query: TimerQuery, timers: Sequence[Timer], work_of: WorkOf) -> int:
    """How many ``timers`` the query's bound, Scopes and kinds select (cursor and
    limit aside)."""
    return sum(
        1
        for t in timers
        if (query.due_by is None or t.fire_at <= query.due_by) and _chosen(query, t, work_of)
    )


def timer_series(
    buckets: Buckets, query: TimerQuery, timers: Sequence[Timer], work_of: WorkOf
) -> list[int]:
    """Per bucket of ``buckets``, how many ``timers`` (the live ones) fire in it among
    those ``count_timers`` counts: the buckets over [start, end) sum to
    ``count_timers`` of the Timers firing in that range."""
    counts = [0] * buckets.count
    for t in timers:
        i = buckets.index(t.fire_at)
        if (
            i is not None
            and (query.due_by is None or t.fire_at <= query.due_by)
            and _chosen(query, t, work_of)
        ):
            counts[i] += 1
    return counts


def select_waits(query: ActiveWaitQuery, waits: Sequence[Wait]) -> list[Wait]:
    """The page of ``waits`` (the active ones) ``query`` selects."""
    rows = (((w.created_at, w.id), w) for w in waits)
    return _page(rows, query.created_by, _key(query.after), _key(query.before), query.limit)


def count_waits(query: ActiveWaitQuery, waits: Sequence[Wait]) -> int:
    """How many ``waits`` the query's bound selects (cursor and limit aside)."""
    bound = query.created_by
    return sum(1 for w in waits if bound is None or w.created_at <= bound)
