"""The Work pages' reads: one ``storage.view`` per page (``console.polling``), so a
page sees one consistent snapshot and its query count is fixed by its shape, not by
timing. Pages that poll pass the stamp they last saw and get None ("unchanged")."""

from __future__ import annotations

from dataclasses import dataclass

from console.attempts import LastTry, attempt_label, last_try, read_last_tries, wait_label
from console.polling import digest_of, polled_view, read
from console.scopes import subtree
from console.works.filters import Cursor, WorkFilter
from console.works.waiting import WhyWaiting, explain_waits
from storage import (
    Execution,
    StoredEvent,
    Timer,
    Tx,
    Wait,
    Work,
    WorkFacets,
    WorkKey,
    WorkOrder,
    WorkQuery,
)
from storage.ops.control import cancel_refusal, retry_refusal

TIMELINE_MAX = 200
CHILDREN_MAX = 50


# ---------------------------------------------------------------- Work list


@dataclass(frozen=True, slots=True)
class WorkListPage:
    now: int
    stamp: str
    works: list[Work]
    facets: WorkFacets
    next_key: WorkKey | None
    prev_key: WorkKey | None
    tries: dict[str, LastTry]  # each listed Work's latest attempt and what comes next

    @property
    def count(self) -> int:
        """Works matching the filter: the state facet already counted them."""
        return sum(self.facets.state.values())

    @property
    def rows(self) -> list[tuple[Work, LastTry]]:
        """Each listed Work beside its last try, as the rows draw them."""
        return [(w, self.tries[w.id]) for w in self.works]


def within(tx: Tx, f: WorkFilter) -> frozenset[str]:
    """The Scope IDs of ``f.within``'s subtree (one read of the Scopes), or none."""
    return subtree(tx.scopes(), f.within).ids if f.within else frozenset()


def _page_after(
    tx: Tx, f: WorkFilter, after: WorkKey | None, tree: frozenset[str]
) -> tuple[list[Work], bool]:
    """The filter's page after ``after`` (the first page when None) and whether more
    follow it: one read of one row more than the page."""
    rows = tx.query_works(f.query(after=after, limit=f.size + 1, scope_ids=tree))
    return rows[: f.size], len(rows) > f.size


class ListReads:
    """What the Work list's mark and its page both read: the Scopes of ``within`` and
    the filter's facets, each once per View. The two run in the same View (the mark
    first), so a poll whose mark moved builds its page from the same reads."""

    def __init__(self, f: WorkFilter) -> None:
        self.f = f
        self._tx: Tx | None = None  # the View the reads below were made in
        self._tree: frozenset[str] | None = None
        self._facets: WorkFacets | None = None

    def _in(self, tx: Tx) -> None:
        if tx is not self._tx:
            self._tx, self._tree, self._facets = tx, None, None

    def tree(self, tx: Tx) -> frozenset[str]:
        self._in(tx)
        if self._tree is None:
            self._tree = within(tx, self.f)
        return self._tree

    def facets(self, tx: Tx) -> WorkFacets:
        self._in(tx)
        if self._facets is None:
            self._facets = tx.work_facets(self.f.query(scope_ids=self.tree(tx)))
        return self._facets


def work_list_mark(tx: Tx, f: WorkFilter, cursor: Cursor | None, shared: ListReads) -> str:
    """The Work list's mark (``console.polling``): the page's IDs with its Work's
    newest log row and live Timers (``Tx.works_mark``: the rows and their last tries)
    and the filter's facets; "" (cannot tell) for a page back, which falls back to the
    first page when it reaches the start. Queries: the Scopes when ``within`` is set
    (1), the page's IDs (1), their newest rows and Timers (1), the facets (1)."""
    if cursor is not None and cursor.backward:
        return ""
    after = cursor.key if cursor else None
    page = f.query(after=after, limit=f.size + 1, scope_ids=shared.tree(tx))
    return digest_of((tx.works_mark(page), shared.facets(tx)))


def read_work_list(f: WorkFilter, cursor: Cursor | None, seen: str = "") -> WorkListPage | None:
    """A page of Work in keyset order plus the facets of the whole filter. Queries: the
    stamp (none: the View's snapshot read it), on a poll after a commit the mark
    (``work_list_mark``), then when it moved or on a first render: the Scopes when
    ``within`` is set (1), the page (1, 2 when paging back past the start), the facets
    (1), the rows' last tries (3); the Scopes and the facets are read once when the
    mark read them first (``ListReads``)."""
    shared = ListReads(f)

    def build(tx: Tx, stamp: str) -> WorkListPage:
        size = f.size
        tree = shared.tree(tx)
        query = f.query(scope_ids=tree)
        if cursor is not None and cursor.backward:
            page = f.query(after=cursor.key, limit=size + 1, reverse=True, scope_ids=tree)
            rows = tx.query_works(page)
            has_prev, rows = len(rows) > size, rows[:size][::-1]
            has_next = True
            if not has_prev and len(rows) < size:
                # Back at the start with a short page: show a full first page instead.
                rows, has_next = _page_after(tx, f, None, tree)
        else:
            rows, has_next = _page_after(tx, f, cursor.key if cursor else None, tree)
            has_prev = cursor is not None
        return WorkListPage(
            now=tx.now,
            stamp=stamp,
            works=rows,
            facets=shared.facets(tx),
            next_key=query.key_of(rows[-1]) if rows and has_next else None,
            prev_key=query.key_of(rows[0]) if rows and has_prev else None,
            tries=read_last_tries(tx, rows),
        )

    return polled_view(seen, build, mark=lambda tx: work_list_mark(tx, f, cursor, shared))


@dataclass(frozen=True, slots=True)
class WorkCountPage:
    """A page of Work and how many match the filter, without the list page's facets and
    last tries: what the API's Work list answers."""

    works: list[Work]
    count: int
    next_key: WorkKey | None


def read_work_count_page(f: WorkFilter, after: WorkKey | None) -> WorkCountPage:
    """A page of Work after ``after`` in keyset order and the filter's count, in one View.
    Queries: the Scopes when ``within`` is set (1), the page (1), the count (1: from the
    Work tally when it answers the filter, else counted from the rows)."""

    def build(tx: Tx) -> WorkCountPage:
        tree = within(tx, f)
        query = f.query(scope_ids=tree)
        rows, has_next = _page_after(tx, f, after, tree)
        return WorkCountPage(
            works=rows,
            count=tx.count_works(query),
            next_key=query.key_of(rows[-1]) if rows and has_next else None,
        )

    return read(build)


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
    last_try: LastTry
    attempt_labels: dict[str, str]  # Execution ID -> what happened to it, in words
    wait_labels: dict[str, str]  # Wait ID -> active, or how it ended
    waiting: list[WhyWaiting]  # the active Waits explained (console.works.waiting)

    @property
    def timer_by_id(self) -> dict[str, Timer]:
        """The Work's Timers by ID: a Wait's timeout column shows its Timer's time."""
        return {t.id: t for t in self.timers}


def work_page_mark(tx: Tx, work_id: str) -> str:
    """The Work page's mark (``console.polling``): ``Tx.work_mark`` of the Work and
    the children the page lists, or "" (cannot tell) while it has an active Wait,
    whose near misses are the store's newest Events of the awaited types."""
    found = tx.work_mark(work_id, CHILDREN_MAX)
    return "" if found.active_waits else digest_of(found)


def read_work_detail(work_id: str, seen: str = "") -> WorkDetail | None:
    """Queries: the stamp (none: the View's snapshot read it); on a poll after a
    commit, the mark (``work_page_mark``: 1, 2 when the Work has children); then when
    it moved or on a first render: the Work (1),
    children (1), attempts (1), timeline (1), Waits (1), Timers (1), and one per
    active Wait (its near misses)."""

    def build(tx: Tx, stamp: str) -> WorkDetail:
        work = tx.work(work_id)
        children = tx.query_works(
            WorkQuery(parent_id=work.id, order=WorkOrder.CREATED_ASC, limit=CHILDREN_MAX + 1)
        )
        attempts = sorted(tx.executions(work.id), key=lambda x: x.attempt, reverse=True)
        events = tx.work_events(work.id, 0, TIMELINE_MAX + 1)
        live = sum(1 for x in attempts if not x.terminal)
        waits, timers = tx.waits(work.id), tx.timers(work.id)
        return WorkDetail(
            now=tx.now,
            stamp=stamp,
            work=work,
            children=children[:CHILDREN_MAX],
            more_children=len(children) > CHILDREN_MAX,
            attempts=attempts,
            events=events[:TIMELINE_MAX],
            more_events=len(events) > TIMELINE_MAX,
            waits=waits,
            timers=sorted(timers, key=lambda t: (t.fire_at, t.id)),
            cancel_refusal=cancel_refusal(work),
            retry_refusal=retry_refusal(work, live),
            last_try=last_try(work, attempts[0] if attempts else None, timers, waits),
            attempt_labels={x.id: attempt_label(x, waits, work.state) for x in attempts},
            wait_labels={w.id: wait_label(w, work.state) for w in waits},
            waiting=explain_waits(tx, waits, timers),
        )

    return polled_view(seen, build, mark=lambda tx: work_page_mark(tx, work_id))
