"""The runtime pages' reads (attempts, Waits, Timers, Scopes, artifacts): one
``storage.view`` per page (``console.polling``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from console.attempts import attempt_label
from console.overdue import overdue_by
from console.polling import polled_view, read
from console.runtime.ahead import AheadFilter
from console.runtime.execfilter import ExecutionFilter
from console.runtime.filters import PageCursor, StartedFilter, TimerFilter, WaitFilter
from console.scopes import subtree
from storage import (
    LIVE_EXECUTION_STATES,
    ActiveWaitQuery,
    ArtifactRef,
    Buckets,
    Execution,
    ExecutionKey,
    ExecutionQuery,
    ExecutionState,
    LeaseKey,
    NotFound,
    Scope,
    Timer,
    TimerKey,
    TimerQuery,
    Tx,
    Wait,
    WaitKey,
    Work,
    WorkKey,
    WorkQuery,
    WorkState,
)

STARTED_MAX = 200
WAIT_STATES = (ExecutionState.PARKED, ExecutionState.WAITING)


@dataclass(frozen=True, slots=True)
class Listing[T]:
    now: int
    stamp: str
    rows: list[T]


@dataclass(frozen=True, slots=True)
class ExecutionRow:
    """A row of the Executions page: the attempt and its Work's kind and Scope."""

    x: Execution
    kind: str
    scope_id: str
    expired: bool  # live with a lease that has expired at the View's time


@dataclass(frozen=True, slots=True)
class ExecutionPage:
    now: int
    stamp: str
    rows: list[ExecutionRow]
    next_key: ExecutionKey | LeaseKey | None  # the next page's cursor, when there is one


def read_execution_page(
    f: ExecutionFilter, after: ExecutionKey | LeaseKey | None, seen: str = ""
) -> ExecutionPage | None:
    """A page of attempts in the filter's keyset order, each with its Work's kind and
    Scope. Queries: the View and its stamp, the Scopes when ``within`` is set (1), the
    page (1) and its Work (1, one read of the page's IDs), whatever the page size
    (tests/console/test_executions_page.py pins the count)."""

    def build(tx: Tx, stamp: str) -> ExecutionPage:
        scope_ids = frozenset(subtree(tx.scopes(), f.within).ids) if f.within else None
        query = f.query(scope_ids, after, f.size + 1, tx.now)
        found = tx.query_executions(query)
        has_next, found = len(found) > f.size, found[: f.size]
        work_ids = sorted({x.work_id for x in found})
        works = {w.id: w for w in tx.works_of(work_ids)} if work_ids else {}
        rows = []
        for x in found:
            work = works.get(x.work_id)
            expired = x.state in LIVE_EXECUTION_STATES and 0 < x.lease_expires_at <= tx.now
            rows.append(
                ExecutionRow(x, work.kind if work else "", work.scope_id if work else "", expired)
            )
        key_of = ExecutionQuery.lease_key_of if query.by_lease else ExecutionQuery.key_of
        next_key = key_of(found[-1]) if has_next and found else None
        return ExecutionPage(tx.now, stamp, rows, next_key)

    return polled_view(seen, build)


@dataclass(frozen=True, slots=True)
class StartedPage:
    now: int
    stamp: str
    rows: list[Execution]  # the most recently started first, at most STARTED_MAX
    total: int  # attempts started in the range
    labels: dict[str, str]  # Execution ID -> what happened to it (console.attempts)


def read_started_executions(f: StartedFilter, seen: str = "") -> StartedPage | None:
    """Attempts first claimed in the filter's range: the Scopes when ``within`` is set
    (1), the range's count (1, as one attempt_series bucket), its latest rows (1) and
    the Waits of those that parked or ended waiting (1 when there are some)."""

    def build(tx: Tx, stamp: str) -> StartedPage:
        until = f.until_ns if f.until_ns is not None else tx.now + 1
        scope_ids = sorted(subtree(tx.scopes(), f.within).ids) if f.within else None
        total = 0
        if until > f.since_ns:
            axis = Buckets(f.since_ns, until - f.since_ns, 1)
            total = tx.attempt_series(axis, scope_ids)[0]
        rows = tx.started_executions(f.since_ns, until, scope_ids, STARTED_MAX)
        # Only an attempt that parked or ended waiting needs its Wait to be told truly.
        parked = sorted({x.work_id for x in rows if x.state in WAIT_STATES})
        waits = tx.waits_of(parked) if parked else []
        labels = {x.id: attempt_label(x, waits, None) for x in rows}
        return StartedPage(tx.now, stamp, rows, total, labels)

    return polled_view(seen, build)


@dataclass(frozen=True, slots=True)
class WaitItem:
    """A row of the Waits page: the Wait and its timeout Timer, if it has one."""

    wait: Wait
    timeout: Timer | None
    work: Work | None  # for its kind and Scope


@dataclass(frozen=True, slots=True)
class KeysetPage[T]:
    """A page of the Waits or Timers list: its rows, how many the whole selection
    holds, and the cursors of the pages beside it (None: there is none)."""

    now: int
    stamp: str
    rows: list[T]
    total: int
    first: bool  # the first page (no row comes before it): the one that polls
    next_key: WorkKey | None  # after the last row, when rows follow
    prev_key: WorkKey | None  # before the first row, when rows precede


def _page[R](
    read: Callable[[Any, Any, int], list[R]],
    key_of: Callable[[R], WorkKey],
    cursor: PageCursor,
    size: int,
) -> tuple[list[R], bool, WorkKey | None, WorkKey | None]:
    """One keyset page: ``read(after, before, limit)`` for one row more than the page
    (which says whether more follow). A page before a cursor that reaches the start
    is the first page, read again from the start (one more statement, then only)."""
    if cursor.before is not None:
        found = read(None, cursor.before, size + 1)
        if len(found) > size:
            rows = found[1:]
            return rows, False, key_of(rows[-1]), key_of(rows[0])
        cursor = PageCursor()
    found = read(cursor.after, None, size + 1)
    rows, more = found[:size], len(found) > size
    next_key = key_of(rows[-1]) if more else None
    prev_key = key_of(rows[0]) if rows and not cursor.first else None
    return rows, cursor.first, next_key, prev_key


def _timer_key(key: WorkKey | None) -> TimerKey | None:
    return TimerKey(key.time, key.id) if key else None


def _wait_key(key: WorkKey | None) -> WaitKey | None:
    return WaitKey(key.time, key.id) if key else None


def read_wait_page(
    f: WaitFilter, cursor: PageCursor, seen: str = "", now: int | None = None
) -> KeysetPage[WaitItem] | None:
    """A page of active Waits, oldest first (ties by ID), each with its timeout Timer
    and its Work; with ``older``, only those created at least that long before the
    View's time. Queries: the page (1, or 2 when a page back reaches the start), the
    selection's count (1, an index count), the page's Work's Timers (1, when a row
    has a timeout) and its Work (1), whatever the store holds
    (tests/console/test_runtime_paging.py pins the count)."""

    def build(tx: Tx, stamp: str) -> KeysetPage[WaitItem]:
        # Older than the epoch selects nothing (and stays a 64-bit instant).
        created_by = max(tx.now - f.older_ns, -1) if f.older_ns else None
        base = ActiveWaitQuery(created_by=created_by)

        def read(after: Any, before: Any, limit: int) -> list[Wait]:
            q = replace(base, after=_wait_key(after), before=_wait_key(before), limit=limit)
            return tx.query_active_waits(q)

        waits, first, next_key, prev_key = _page(read, _key_of_wait, cursor, f.size)
        total = tx.count_active_waits(base)
        # Only the Timers of the Waits on the page: a Wait's timeout Timer is armed
        # for its Wait's Work, so these are read by Work (one indexed read), never all.
        timed = sorted({w.work_id for w in waits if w.timeout_timer_id})
        timers = {t.id: t for t in tx.timers_of(timed)} if timed else {}
        work_ids = sorted({w.work_id for w in waits})
        works = {w.id: w for w in tx.works_of(work_ids)} if work_ids else {}
        rows = [WaitItem(w, timers.get(w.timeout_timer_id), works.get(w.work_id)) for w in waits]
        return KeysetPage(tx.now, stamp, rows, total, first, next_key, prev_key)

    # Age alone moves a Wait into an "older than" list: re-render once a minute then.
    return polled_view(seen, build, now=now, period=60 * 10**9 if f.older_ns else 0)


def _key_of_wait(w: Wait) -> WorkKey:
    return WorkKey(w.created_at, w.id)


def _key_of_timer(t: Timer) -> WorkKey:
    return WorkKey(t.fire_at, t.id)


def read_timer_page(
    f: TimerFilter, cursor: PageCursor, seen: str = "", now: int | None = None
) -> KeysetPage[Timer] | None:
    """A page of Timers by fire time, earliest (most overdue) first, ties by ID; with
    ``due``, only those due by the View's time; with ``overdue``, only those late by
    more than the grace (``console.overdue``); with ``scope``, only those of Work in
    that Scope's subtree (``console.scopes.subtree``, as the Scope dashboard counts
    them; a Scope that does not exist selects none). Queries: the page (1, or 2 when a
    page back reaches the start), the selection's count (1, an index count) and with
    ``scope`` the Scopes (1)."""

    def build(tx: Tx, stamp: str) -> KeysetPage[Timer]:
        due_by = overdue_by(tx.now) if f.overdue else tx.now if f.due else None
        scope_ids = subtree(tx.scopes(), f.scope).ids if f.scope else None
        base = TimerQuery(due_by=due_by, scope_ids=scope_ids)

        def read(after: Any, before: Any, limit: int) -> list[Timer]:
            q = replace(base, after=_timer_key(after), before=_timer_key(before), limit=limit)
            return tx.query_timers(q)

        timers, first, next_key, prev_key = _page(read, _key_of_timer, cursor, f.size)
        total = tx.count_timers(base)
        return KeysetPage(tx.now, stamp, timers, total, first, next_key, prev_key)

    # Time alone makes a Timer due: the due list re-renders once a minute at least.
    return polled_view(seen, build, now=now, period=60 * 10**9 if f.due or f.overdue else 0)


@dataclass(frozen=True, slots=True)
class AheadRow:
    """A Timer to come and its Work (None when it serves none, or no longer exists)."""

    timer: Timer
    work: Work | None


@dataclass(frozen=True, slots=True)
class AheadPage:
    """Timers to come (``console.runtime.ahead``): the strip's counts and a page of
    the list, each Timer with its Work (for its kind and Scope)."""

    now: int
    stamp: str
    rows: list[AheadRow]
    total: int  # every Timer due by the end of the window
    first: bool
    next_key: WorkKey | None
    prev_key: WorkKey | None
    overdue: int  # late by more than the grace
    due: int  # due by now, overdue or not
    ahead: list[int]  # per bucket after now


def read_ahead(
    f: AheadFilter, cursor: PageCursor, seen: str = "", now: int | None = None
) -> AheadPage | None:
    """The Timers due by the end of the window (overdue ones first), of Work in the
    Scope's subtree and of the kind. Queries: the Scopes (1, with ``scope``), two
    index counts (the overdue, the due), the strip (1: a COUNT per bucket over its
    range of timer_due; with the due count, the list's count), the page (1, or 2 when
    a page back reaches the start) and its Work (1, when it has any), whatever the
    store holds
    (tests/console/test_timers_ahead.py pins the count)."""

    def build(tx: Tx, stamp: str) -> AheadPage:
        w = f.spec
        scope_ids = subtree(tx.scopes(), f.scope).ids if f.scope else None
        kinds = frozenset({f.kind}) if f.kind else None
        base = TimerQuery(due_by=tx.now + w.span, scope_ids=scope_ids, kinds=kinds)

        def read(after: Any, before: Any, limit: int) -> list[Timer]:
            q = replace(base, after=_timer_key(after), before=_timer_key(before), limit=limit)
            return tx.query_timers(q)

        timers, first, next_key, prev_key = _page(read, _key_of_timer, cursor, f.size)
        overdue = tx.count_timers(replace(base, due_by=overdue_by(tx.now)))
        due = tx.count_timers(replace(base, due_by=tx.now))
        # (now, now + span]: the buckets start right after now, the due ones' end, so
        # the list's count is their sum, not a third walk of the window (with a Scope
        # or kind each walk probes a Work per Timer: 60-100 ms per 20,000 Timers).
        ahead = tx.timer_series(Buckets(tx.now + 1, w.width, w.count), base)
        total = due + sum(ahead)
        work_ids = sorted({t.work_id for t in timers if t.work_id})
        works = {x.id: x for x in tx.works_of(work_ids)} if work_ids else {}
        rows = [AheadRow(t, works.get(t.work_id)) for t in timers]
        keys = (first, next_key, prev_key)
        return AheadPage(tx.now, stamp, rows, total, *keys, overdue, due, ahead)

    # Time alone moves Timers into the window and makes them due: once a minute.
    return polled_view(seen, build, now=now, period=60 * 10**9)


@dataclass(frozen=True, slots=True)
class ScopeNode:
    scope: Scope | None  # None for Work without a Scope
    depth: int
    counts: dict[str, int]  # Work state -> count in this Scope
    subtree_total: int

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def read_scopes(seen: str = "") -> Listing[ScopeNode] | None:
    """Scopes as an indented tree (depth-first, children by ID) with Work counts by
    state. Counts come from one facet read per state: six reads whatever the number
    of Scopes."""

    def build(tx: Tx, stamp: str) -> Listing[ScopeNode]:
        scopes = tx.scopes()
        counts: dict[str, dict[str, int]] = {}
        for state in WorkState:
            by_scope = tx.work_facets(WorkQuery(states=frozenset({state}))).scope
            for scope_id, n in by_scope.items():
                counts.setdefault(scope_id, {})[state.value] = n
        return Listing(tx.now, stamp, _tree(scopes, counts))

    return polled_view(seen, build)


def _tree(scopes: list[Scope], counts: dict[str, dict[str, int]]) -> list[ScopeNode]:
    known = {s.id for s in scopes}
    children: dict[str, list[Scope]] = {}
    for scope in scopes:
        # A parent that no longer resolves shows its child at the top level.
        parent = scope.parent_id if scope.parent_id in known else ""
        children.setdefault(parent, []).append(scope)
    order: list[tuple[Scope, int]] = []

    def walk(parent: str, depth: int) -> None:
        for scope in children.get(parent, []):
            order.append((scope, depth))
            walk(scope.id, depth + 1)

    walk("", 0)
    totals: dict[str, int] = {}
    for scope, _ in reversed(order):  # children come after their parent: sum bottom-up
        own = sum(counts.get(scope.id, {}).values())
        totals[scope.id] = own + sum(totals[c.id] for c in children.get(scope.id, []))
    out = [ScopeNode(s, d, counts.get(s.id, {}), totals[s.id]) for s, d in order]
    if counts.get(""):
        out.append(ScopeNode(None, 0, counts[""], sum(counts[""].values())))
    return out


def read_artifact_ref(execution_id: str, artifact_id: str) -> tuple[Execution, ArtifactRef]:
    """The Execution and the reference attached to it; NotFound for any other ID."""

    def find(tx: Tx) -> tuple[Execution, ArtifactRef]:
        execution = tx.execution(execution_id)
        for ref in execution.artifacts:
            if ref.id == artifact_id:
                return execution, ref
        raise NotFound(f"Execution {execution_id} has no artifact {artifact_id}")

    return read(find)
