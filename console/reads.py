"""One read per page: each function gathers everything its page needs in ONE
``storage.view`` call, so a page sees one consistent snapshot and its query count is
fixed by its shape, not by timing.

Pages that poll pass the stamp they last saw; the read answers ``None`` ("unchanged")
after reading only the stamp when nothing was committed since.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import storage
from console.actions import BULK_CAP, Action
from console.filters import Cursor, EventFilter, SeqCursor, StartedFilter, WorkFilter
from console.scopes import subtree
from console.stores import get_store
from storage import (
    CorrelationKey,
    Execution,
    NotFound,
    Scope,
    StoredEvent,
    Timer,
    Tx,
    Wait,
    Work,
    WorkFacets,
    WorkKey,
    WorkQuery,
    WorkState,
)
from storage.control import cancel_refusal, retry_refusal

TIMELINE_MAX = 200
CHILDREN_MAX = 50
CAUSATION_DEPTH = 50


def stamp_of(tx: Tx) -> str:
    """What a poll compares: the latest acceptance sequence and the store-wide change
    counter (two single-row reads)."""
    return f"{tx.latest_sequence()}.{tx.store_version()}"


def _view[T](fn: Callable[[Tx], T]) -> T:
    return storage.view(get_store(), None, fn)


# ---------------------------------------------------------------- Work list


@dataclass(frozen=True, slots=True)
class WorkListPage:
    now: int
    stamp: str
    works: list[Work]
    facets: WorkFacets
    next_key: WorkKey | None
    prev_key: WorkKey | None

    @property
    def count(self) -> int:
        """Works matching the filter: the state facet already counted them."""
        return sum(self.facets.state.values())


def within(tx: Tx, f: WorkFilter) -> frozenset[str]:
    """The Scope IDs of ``f.within``'s subtree (one read of the Scopes), or none."""
    return subtree(tx.scopes(), f.within).ids if f.within else frozenset()


def read_work_list(f: WorkFilter, cursor: Cursor | None, seen: str = "") -> WorkListPage | None:
    """A page of Work in keyset order plus the facets of the whole filter. Queries:
    the stamp (2), the Scopes when ``within`` is set (1), the page (1, 2 when paging
    back past the start), the facets (1)."""

    def read(tx: Tx) -> WorkListPage | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None
        size = f.size
        tree = within(tx, f)
        query = f.query(scope_ids=tree)
        if cursor is not None and cursor.backward:
            page = f.query(after=cursor.key, limit=size + 1, reverse=True, scope_ids=tree)
            rows = tx.query_works(page)
            has_prev, rows = len(rows) > size, rows[:size][::-1]
            has_next = True
            if not has_prev and len(rows) < size:
                # Back at the start with a short page: show a full first page instead.
                rows = tx.query_works(f.query(limit=size + 1, scope_ids=tree))
                has_next, rows = len(rows) > size, rows[:size]
        else:
            after = cursor.key if cursor else None
            rows = tx.query_works(f.query(after=after, limit=size + 1, scope_ids=tree))
            has_next, rows = len(rows) > size, rows[:size]
            has_prev = cursor is not None
        facets = tx.work_facets(query)
        return WorkListPage(
            now=tx.now,
            stamp=stamp,
            works=rows,
            facets=facets,
            next_key=query.key_of(rows[-1]) if rows and has_next else None,
            prev_key=query.key_of(rows[0]) if rows and has_prev else None,
        )

    return _view(read)


def find_work(term: str) -> str | None:
    """The ID of the Work a search term names: its ID, or a correlation key written
    ``source/external_id`` (sources may contain "/": every split is tried)."""

    def read(tx: Tx) -> str | None:
        try:
            return tx.work(term).id
        except NotFound:
            pass
        for i, char in enumerate(term):
            if char == "/" and 0 < i < len(term) - 1:
                try:
                    return tx.work_by_key(CorrelationKey(term[:i], term[i + 1 :])).id
                except NotFound:
                    continue
        return None

    return _view(read)


# ---------------------------------------------------------------- Work detail


@dataclass(frozen=True, slots=True)
class WorkDetail:
    now: int
    stamp: str
    work: Work
    children: list[Work]
    more_children: bool
    attempts: list[Execution]  # newest attempt first
    events: list[StoredEvent]  # oldest first
    more_events: bool
    waits: list[Wait]
    timers: list[Timer]
    cancel_refusal: str
    retry_refusal: str


def read_work_detail(work_id: str, seen: str = "") -> WorkDetail | None:
    """Queries: the stamp (2), the Work (1), children (1), attempts (1), timeline (1),
    Waits (1), Timers (1)."""

    def read(tx: Tx) -> WorkDetail | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None
        work = tx.work(work_id)
        children = tx.query_works(
            WorkQuery(
                parent_id=work.id, order=storage.WorkOrder.CREATED_ASC, limit=CHILDREN_MAX + 1
            )
        )
        attempts = sorted(tx.executions(work.id), key=lambda x: x.attempt, reverse=True)
        events = tx.work_events(work.id, 0, TIMELINE_MAX + 1)
        live = sum(1 for x in attempts if not x.terminal)
        return WorkDetail(
            now=tx.now,
            stamp=stamp,
            work=work,
            children=children[:CHILDREN_MAX],
            more_children=len(children) > CHILDREN_MAX,
            attempts=attempts,
            events=events[:TIMELINE_MAX],
            more_events=len(events) > TIMELINE_MAX,
            waits=tx.waits(work.id),
            timers=sorted(tx.timers(work.id), key=lambda t: (t.fire_at, t.id)),
            cancel_refusal=cancel_refusal(work),
            retry_refusal=retry_refusal(work, live),
        )

    return _view(read)


@dataclass(frozen=True, slots=True)
class ActionPreview:
    """What the confirmation page of one action shows."""

    now: int
    work: Work
    refusal: str
    live: list[Execution]
    active_waits: list[Wait]
    timers: list[Timer]
    next_attempt: int


def read_action_preview(work_id: str, action: Action) -> ActionPreview:
    def read(tx: Tx) -> ActionPreview:
        work = tx.work(work_id)
        live = tx.live_executions(work.id)
        attempts = tx.executions(work.id)
        refusal = (
            cancel_refusal(work) if action is Action.CANCEL else retry_refusal(work, len(live))
        )
        return ActionPreview(
            now=tx.now,
            work=work,
            refusal=refusal,
            live=live,
            active_waits=tx.active_waits(work.id),
            timers=tx.timers(work.id),
            next_attempt=max((x.attempt for x in attempts), default=0) + 1,
        )

    return _view(read)


# ---------------------------------------------------------------- bulk


@dataclass(frozen=True, slots=True)
class BulkPlan:
    action: Action
    eligible: list[Work]
    excluded: list[tuple[str, Work | None, str]]  # (Work ID, Work if it exists, reason)
    truncated: bool  # the filter matched more than ``cap`` Works
    cap: int


def read_bulk_plan(
    action: Action, *, work_ids: list[str] | None = None, f: WorkFilter | None = None
) -> BulkPlan:
    """Split the selected Works (by ID, or the first BULK_CAP the filter matches, in
    its order) into eligible and excluded-with-reason. Live attempts are read once."""

    def read(tx: Tx) -> BulkPlan:
        excluded: list[tuple[str, Work | None, str]] = []
        works: list[Work] = []
        truncated = False
        if work_ids is not None:
            for work_id in dict.fromkeys(work_ids):
                try:
                    works.append(tx.work(work_id))
                except NotFound:
                    excluded.append((work_id, None, "no such Work"))
        elif f is not None:
            works = tx.query_works(f.query(limit=BULK_CAP + 1, scope_ids=within(tx, f)))
            truncated, works = len(works) > BULK_CAP, works[:BULK_CAP]
        live = {x.work_id for x in tx.live_executions()} if action is Action.RETRY else set()
        eligible = []
        for work in works:
            if action is Action.CANCEL:
                why = cancel_refusal(work)
            else:
                why = retry_refusal(work, 1 if work.id in live else 0)
            if why:
                excluded.append((work.id, work, why))
            else:
                eligible.append(work)
        return BulkPlan(action, eligible, excluded, truncated, BULK_CAP)

    return _view(read)


# ---------------------------------------------------------------- Events


@dataclass(frozen=True, slots=True)
class EventPage:
    now: int
    stamp: str
    events: list[StoredEvent]  # newest first
    older: int  # "before" cursor of the older page, 0 when none
    newer: int  # "after" cursor of the newer page, 0 when this is the newest


def read_events(f: EventFilter, cursor: SeqCursor, size: int, seen: str = "") -> EventPage | None:
    """A page of the stream, newest first: one indexed ``find_events`` read of at most
    ``size + 1`` Events (the extra one says whether another page exists), after the
    Scopes when ``within`` is set."""

    def read(tx: Tx) -> EventPage | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None
        scope_ids = [f.scope] if f.scope else None
        if f.within:
            tree = subtree(tx.scopes(), f.within).ids
            scope_ids = [s for s in scope_ids if s in tree] if scope_ids else sorted(tree)
        search = {
            "sources": [f.source] if f.source else [],
            "types": [f.type] if f.type else [],
            "scope_ids": scope_ids,
            "work_id": f.work,
            "unrouted": f.unrouted,
            "received_since": f.since_ns,
            "received_before": f.until_ns,
        }
        if cursor.after:
            found = tx.find_events(after=cursor.after, limit=size + 1, **search)
            events = found[:size][::-1]
            newer = events[0].sequence if len(found) > size else 0
            older = events[-1].sequence if events else cursor.after + 1
            return EventPage(tx.now, stamp, events, older, newer)
        found = tx.find_events(before=cursor.before, limit=size + 1, newest_first=True, **search)
        events = found[:size]
        older = events[-1].sequence if len(found) > size else 0
        newer = 0
        if cursor.before:
            newer = events[0].sequence if events else cursor.before - 1
        return EventPage(tx.now, stamp, events, older, newer)

    return _view(read)


@dataclass(frozen=True, slots=True)
class EventDetail:
    now: int
    stored: StoredEvent
    ancestors: list[StoredEvent]  # the root cause first, the direct cause last
    derived: list[StoredEvent]
    chain_cut: bool  # the causation chain is longer than CAUSATION_DEPTH


def read_event(event_id: str) -> EventDetail:
    def read(tx: Tx) -> EventDetail:
        stored = tx.event(event_id)
        ancestors: list[StoredEvent] = []
        cause = stored.event.causation_id
        while cause and len(ancestors) < CAUSATION_DEPTH:
            parent = tx.event(cause)
            ancestors.append(parent)
            cause = parent.event.causation_id
        return EventDetail(
            now=tx.now,
            stored=stored,
            ancestors=ancestors[::-1],
            derived=tx.derived_events(stored.id),
            chain_cut=bool(cause),
        )

    return _view(read)


# ---------------------------------------------------------------- runtime pages


@dataclass(frozen=True, slots=True)
class Listing[T]:
    now: int
    stamp: str
    rows: list[T]


def read_live_executions(seen: str = "") -> Listing[Execution] | None:
    """Live attempts: expired leases first, then by lease expiry, pending last."""

    def read(tx: Tx) -> Listing[Execution] | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None

        def order(x: Execution) -> tuple[int, int, str]:
            if x.lease_expires_at:
                return (0 if x.lease_expires_at <= tx.now else 1, x.lease_expires_at, x.id)
            return (2, x.created_at, x.id)

        return Listing(tx.now, stamp, sorted(tx.live_executions(), key=order))

    return _view(read)


STARTED_MAX = 200


@dataclass(frozen=True, slots=True)
class StartedPage:
    now: int
    stamp: str
    rows: list[Execution]  # the most recently started first, at most STARTED_MAX
    total: int  # attempts started in the range


def read_started_executions(f: StartedFilter, seen: str = "") -> StartedPage | None:
    """Attempts first claimed in the filter's range: the Scopes when ``within`` is set
    (1), the range's count (1, as one attempt_series bucket) and its latest rows (1)."""

    def read(tx: Tx) -> StartedPage | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None
        until = f.until_ns if f.until_ns is not None else tx.now + 1
        scope_ids = sorted(subtree(tx.scopes(), f.within).ids) if f.within else None
        total = 0
        if until > f.since_ns:
            axis = storage.Buckets(f.since_ns, until - f.since_ns, 1)
            total = tx.attempt_series(axis, scope_ids)[0]
        rows = tx.started_executions(f.since_ns, until, scope_ids, STARTED_MAX)
        return StartedPage(tx.now, stamp, rows, total)

    return _view(read)


@dataclass(frozen=True, slots=True)
class WaitRow:
    wait: Wait
    timeout: Timer | None


def read_active_waits(seen: str = "") -> Listing[WaitRow] | None:
    """Active Waits, oldest first, each with its timeout Timer (all Timers are read
    once rather than one query per Wait)."""

    def read(tx: Tx) -> Listing[WaitRow] | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None
        waits = tx.active_waits()
        timers = {t.id: t for t in tx.timers()} if any(w.timeout_timer_id for w in waits) else {}
        rows = [WaitRow(w, timers.get(w.timeout_timer_id)) for w in waits]
        rows.sort(key=lambda r: (r.wait.created_at, r.wait.id))
        return Listing(tx.now, stamp, rows)

    return _view(read)


def read_timers(due_only: bool, seen: str = "") -> Listing[Timer] | None:
    """Timers by fire time, earliest (most overdue) first."""

    def read(tx: Tx) -> Listing[Timer] | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None
        timers = tx.due_timers(tx.now) if due_only else tx.timers()
        return Listing(tx.now, stamp, sorted(timers, key=lambda t: (t.fire_at, t.id)))

    return _view(read)


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

    def read(tx: Tx) -> Listing[ScopeNode] | None:
        stamp = stamp_of(tx)
        if stamp == seen:
            return None
        scopes = tx.scopes()
        counts: dict[str, dict[str, int]] = {}
        for state in WorkState:
            by_scope = tx.work_facets(WorkQuery(states=frozenset({state}))).scope
            for scope_id, n in by_scope.items():
                counts.setdefault(scope_id, {})[state.value] = n
        return Listing(tx.now, stamp, _tree(scopes, counts))

    return _view(read)


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


# ---------------------------------------------------------------- artifacts


def read_artifact_ref(execution_id: str, artifact_id: str) -> storage.ArtifactRef:
    """The reference attached to this Execution; NotFound for any other ID."""

    def read(tx: Tx) -> storage.ArtifactRef:
        for ref in tx.execution(execution_id).artifacts:
            if ref.id == artifact_id:
                return ref
        raise NotFound(f"Execution {execution_id} has no artifact {artifact_id}")

    return _view(read)
