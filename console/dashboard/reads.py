"""The team dashboards: one per Scope (with its descendants) and one for everything.

``read_dashboard`` gathers every figure in ONE ``storage.view`` call, so the page is
one consistent snapshot and its query count is fixed by its shape. The "right now"
figures come from live selections only (live Work facets, exhausted Work among the
ready, live attempts, due Timers), so they cost what is live, not what is retained;
the time series count index ranges inside the window (``work_series``,
``event_series``, ``attempt_series``). ``console.dashboard.context`` turns the
figures into charts whose every mark links to the list showing exactly what it counts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from console.attempts import LastTry, read_last_tries
from console.overdue import grace_seconds, overdue_by
from console.polling import polled_view
from console.scopes import Subtree, ancestors, subtree
from console.urlstate import FilterError
from storage import (
    LIVE_WORK_STATES,
    TERMINAL_WORK_STATES,
    Buckets,
    Execution,
    NotFound,
    Scope,
    Timer,
    Tx,
    Work,
    WorkFacets,
    WorkOrder,
    WorkQuery,
    WorkState,
    seconds,
)

LIST_SIZE = 10  # rows in each "oldest / longest / stuck" list
# Time-driven changes (a lease expiring, a Timer falling due, a bucket rolling over)
# happen without a write: a poll re-renders at least once a minute for them.
STAMP_PERIOD = seconds(60)
LIVE_ORDER = tuple(s for s in WorkState if s in LIVE_WORK_STATES)
TERMINAL_ORDER = tuple(s for s in WorkState if s in TERMINAL_WORK_STATES)
MINUTE, HOUR, DAY = seconds(60), seconds(3600), seconds(86_400)
ALL = "all"  # the whole history's window


@dataclass(frozen=True, slots=True)
class Window:
    key: str  # the ?window= value
    label: str
    width: int  # bucket width, ns
    count: int  # buckets
    tick_every: int  # print every n-th bucket's start under the axis
    tick_format: str
    title_format: str


WINDOWS = {
    w.key: w
    for w in (
        Window("1h", "Last hour", 5 * MINUTE, 12, 3, "%H:%M", "%H:%M"),
        Window("24h", "Last 24 hours", HOUR, 24, 6, "%H:%M", "%a %H:%M"),
        Window("7d", "Last 7 days", 6 * HOUR, 28, 4, "%a %H:%M", "%a %d %b %H:%M"),
        Window("30d", "Last 30 days", DAY, 30, 5, "%d %b", "%a %d %b"),
        # The whole history in at most ``count`` buckets of whole days (``axis``): the
        # width given here is the least, widened to span the history.
        Window(ALL, "All history", DAY, 30, 5, "%d %b %Y", "%a %d %b %Y"),
    )
}
DEFAULT_WINDOW = "24h"
# A URL without ?window= on a history younger than a day opens on the last hour: on a
# fresh system the day's window is one bar at its right edge.
YOUNG_WINDOW = "1h"


def parse_window(raw: str) -> Window:
    window = WINDOWS.get(raw or DEFAULT_WINDOW)
    if window is None:
        raise FilterError({"window": f"The window is one of {', '.join(WINDOWS)}."})
    return window


def axis(window: Window, now: int, first: int | None = None) -> Buckets:
    """The window's buckets, aligned to whole bucket widths (UTC) so a shared URL
    shows the same buckets within one width; the last bucket holds ``now``. The whole
    history's window (``first``: its earliest instant) starts on that instant's UTC day
    and takes as many whole days a bucket as keep it within ``window.count`` buckets:
    whole days are what the series tally counts without reading records."""
    if window.key == ALL and first is not None:
        start = min(first, now) // DAY * DAY
        days = now // DAY - start // DAY + 1
        per = -(-days // window.count)
        return Buckets(start, per * DAY, -(-days // per))
    end = (now // window.width + 1) * window.width
    return Buckets(end - window.width * window.count, window.width, window.count)


def first_instant(tx: Tx) -> int | None:
    """The history's earliest instant as far as two index reads tell: the first Work
    created and the first Event accepted (None: an empty store). An Event that made a
    Work is accepted just before it, so this is the day the history begins."""
    work = tx.query_works(WorkQuery(order=WorkOrder.CREATED_ASC, limit=1))
    event = tx.events(limit=1)
    times = [w.created_at for w in work] + [e.event.received_at for e in event]
    return min(times) if times else None


@dataclass(frozen=True, slots=True)
class Dashboard:
    now: int
    stamp: str
    window: Window
    chosen: bool  # the URL named the window (False: chosen by the history's age)
    axis: Buckets
    scope: Scope | None  # None: every Scope
    tree: Subtree | None
    path: list[str]  # the Scope's ancestors, top first
    children: list[tuple[str, int]]  # (child Scope, live Work in its subtree)
    unscoped_live: int  # live Work without a Scope (the all-scopes dashboard)
    live: WorkFacets  # of live Work
    ended: dict[str, list[int]]  # terminal state -> Work per bucket
    events: list[int]
    attempts: list[int]
    exhausted_count: int
    exhausted: list[Work]  # the longest stuck first
    oldest_waiting: list[Work]  # ready or waiting, least recently changed first
    first_failed: Work | None  # the window's earliest failure: "since when"
    longest_running: list[Execution]
    expired: list[Execution]  # running attempts whose lease expired, oldest expiry first
    overdue: list[Timer]  # Timers late by more than ``grace``, earliest first
    # How many of each there are; the lists above hold the first LIST_SIZE only.
    expired_count: int
    overdue_count: int
    tries: dict[str, LastTry]  # the listed Work's last attempts (exhausted, oldest waiting)
    grace: int = 0  # seconds a Timer may be late before it counts as overdue


def auto_window(tx: Tx, now: int) -> Window:
    """The window for a URL that names none: the last hour while the oldest Event is
    less than a day old, else the last 24 hours. One indexed read (the first Event)."""
    first = tx.events(limit=1)
    young = not first or now - first[0].event.received_at < 24 * HOUR
    return WINDOWS[YOUNG_WINDOW if young else DEFAULT_WINDOW]


def read_dashboard(
    scope_id: str | None, window: Window | None, seen: str = "", now: int | None = None
) -> Dashboard | None:
    """Queries: the stamp (none: the View's snapshot read it), the Scopes (1), live
    facets (1, from the tally), the three series (1 each), exhausted Work (2), oldest
    waiting (1), the first failure (1), the longest running and the expired attempts (1
    each), overdue Timers (1), the expired attempts and overdue Timers counted (1 each:
    the lists hold the first ``LIST_SIZE``, so a backlog of either costs its count, not
    its records), the listed Work's last tries (3), and without a ``window`` the first
    Event (1, ``auto_window``), with the whole history's window its first Work and Event
    (2, ``first_instant``). Every selection is by indexed columns (an attempt's Scope is
    a column of its row): no record is decoded but those shown. ``now`` fixes the View's
    time (tests; default: the clock)."""

    def build(tx: Tx, stamp: str) -> Dashboard:
        now = tx.now
        scopes = tx.scopes()
        scope, tree = None, None
        if scope_id is not None:
            scope = next((s for s in scopes if s.id == scope_id), None)
            if scope is None:
                raise NotFound(f"Scope {scope_id!r} does not exist")
            tree = subtree(scopes, scope_id)
        ids = tree.ids if tree else frozenset()
        listed = sorted(ids) if tree else None
        shown = window or auto_window(tx, now)
        buckets = axis(shown, now, first_instant(tx) if shown.key == ALL else None)
        live = tx.work_facets(WorkQuery(states=LIVE_WORK_STATES, scope_ids=ids))
        oldest = WorkQuery(scope_ids=ids, order=WorkOrder.UPDATED_ASC, limit=LIST_SIZE)
        waiting = frozenset({WorkState.READY, WorkState.WAITING})
        failed = frozenset({WorkState.FAILED})
        first_failure = replace(oldest, states=failed, updated_since=buckets.start, limit=1)
        exhausted = tx.exhausted_works(oldest)
        # Overdue: late by more than the grace (a Timer about to fire is no alarm).
        grace = grace_seconds()
        late = overdue_by(now)
        oldest_waiting = tx.query_works(replace(oldest, states=waiting))
        return Dashboard(
            now=now,
            stamp=stamp,
            window=shown,
            chosen=window is not None,
            axis=buckets,
            scope=scope,
            tree=tree,
            path=ancestors(scopes, scope_id) if scope_id else [],
            children=_children(scopes, tree, live),
            unscoped_live=live.scope.get("", 0) if tree is None else 0,
            live=live,
            ended=tx.work_series(WorkQuery(states=TERMINAL_WORK_STATES, scope_ids=ids), buckets),
            events=tx.event_series(buckets, listed),
            attempts=tx.attempt_series(buckets, listed),
            exhausted_count=tx.count_exhausted(WorkQuery(scope_ids=ids)),
            exhausted=exhausted,
            oldest_waiting=oldest_waiting,
            first_failed=next(iter(tx.query_works(first_failure)), None),
            longest_running=tx.running_executions(listed, LIST_SIZE),
            expired=tx.expired_executions(now, listed, LIST_SIZE),
            overdue=tx.overdue_timers(late, listed, LIST_SIZE),
            expired_count=tx.count_expired_executions(now, listed),
            overdue_count=tx.count_overdue_timers(late, listed),
            grace=grace,
            tries=read_last_tries(tx, list({w.id: w for w in exhausted + oldest_waiting}.values())),
        )

    return polled_view(seen, build, now=now, period=STAMP_PERIOD)


def _children(scopes: list[Scope], tree: Subtree | None, live: WorkFacets) -> list[tuple[str, int]]:
    """The Scopes one level down (top-level ones for the all-scopes dashboard) with
    the live Work of each one's subtree, from the live facets already read."""
    known = {s.id for s in scopes}
    if tree is None:
        tops = sorted(s.id for s in scopes if s.parent_id not in known)
    else:
        tops = list(tree.children)
    out = []
    for child in tops:
        own = subtree(scopes, child).ids
        out.append((child, sum(n for s, n in live.scope.items() if s in own)))
    return out
