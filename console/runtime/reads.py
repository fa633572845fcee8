"""The runtime pages' reads (attempts, Waits, Timers, Scopes, artifacts): one
``storage.view`` per page (``console.polling``)."""

from __future__ import annotations

from dataclasses import dataclass

from console.attempts import attempt_label
from console.polling import polled_view, read
from console.runtime.execfilter import ExecutionFilter
from console.runtime.filters import StartedFilter
from console.scopes import subtree
from storage import (
    LIVE_EXECUTION_STATES,
    ArtifactRef,
    Buckets,
    Execution,
    ExecutionKey,
    ExecutionQuery,
    ExecutionState,
    NotFound,
    Scope,
    Timer,
    Tx,
    Wait,
    Work,
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
    next_key: ExecutionKey | None  # the cursor of the next page, when there is one


def read_execution_page(
    f: ExecutionFilter, after: ExecutionKey | None, seen: str = ""
) -> ExecutionPage | None:
    """A page of attempts in the filter's keyset order, each with its Work's kind and
    Scope. Queries: the View and its stamp, the Scopes when ``within`` is set (1), the
    page (1) and its Work (1, one read of the page's IDs), whatever the page size
    (tests/console/test_executions_page.py pins the count)."""

    def build(tx: Tx, stamp: str) -> ExecutionPage:
        scope_ids = frozenset(subtree(tx.scopes(), f.within).ids) if f.within else None
        found = tx.query_executions(f.query(scope_ids, after, f.size + 1))
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
        next_key = ExecutionQuery.key_of(found[-1]) if has_next and found else None
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


def read_active_waits(
    seen: str = "", older_ns: int = 0, now: int | None = None
) -> Listing[WaitItem] | None:
    """Active Waits, oldest first, each with its timeout Timer (all Timers are read
    once rather than one query per Wait) and its Work (one read of their IDs); with
    ``older_ns``, only those created at least that long before the View's time."""

    def build(tx: Tx, stamp: str) -> Listing[WaitItem]:
        waits = tx.active_waits()
        if older_ns:
            waits = [w for w in waits if w.created_at <= tx.now - older_ns]
        timers = {t.id: t for t in tx.timers()} if any(w.timeout_timer_id for w in waits) else {}
        work_ids = sorted({w.work_id for w in waits})
        works = {w.id: w for w in tx.works_of(work_ids)} if work_ids else {}
        rows = [WaitItem(w, timers.get(w.timeout_timer_id), works.get(w.work_id)) for w in waits]
        rows.sort(key=lambda r: (r.wait.created_at, r.wait.id))
        return Listing(tx.now, stamp, rows)

    # Age alone moves a Wait into an "older than" list: re-render once a minute then.
    return polled_view(seen, build, now=now, period=60 * 10**9 if older_ns else 0)


def read_timers(due_only: bool, seen: str = "") -> Listing[Timer] | None:
    """Timers by fire time, earliest (most overdue) first."""

    def build(tx: Tx, stamp: str) -> Listing[Timer]:
        timers = tx.due_timers(tx.now) if due_only else tx.timers()
        return Listing(tx.now, stamp, sorted(timers, key=lambda t: (t.fire_at, t.id)))

    return polled_view(seen, build)


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
