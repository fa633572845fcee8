"""The store in the past, from the record-version log (``storage.versions``): the
Work page as of a moment, and what changed between two moments, in one Work or in
the whole store. One ``storage.view`` a page; the cost follows the changes a page
shows, never the store's size (the log's per-record and per-Work indexes, its key).
"""

from __future__ import annotations

from dataclasses import dataclass

from console.history.changes import Current, Transaction, transactions
from console.history.moments import NOW, Moment, Resolved, resolve
from console.polling import read
from storage import RecordVersion, StoredEvent, Tx, Work, WorkAsOf

TIMELINE_MAX = 20  # the Work's latest Events up to the moment
CHANGES_PAGE = 40  # log rows a page of changes reads (whole transactions)


@dataclass(frozen=True, slots=True)
class WorkThen:
    """The Work page as of a moment: ``then`` the records, ``work_now`` the Work today
    (for the banner's "now it is ..."), ``events`` its latest Events up to the moment
    (newest first) and whether there were more."""

    now: int
    moment: Resolved
    then: WorkAsOf
    work_now: Work
    events: list[StoredEvent]
    more_events: bool
    horizon: int

    @property
    def live_attempts(self) -> int:
        return sum(1 for x in self.then.executions if not x.terminal)


@dataclass(frozen=True, slots=True)
class Changes:
    """A page of changes: of one Work (``work``), or of the whole store (None)."""

    now: int
    work: Work | None
    start: Resolved
    end: Resolved
    transactions: list[Transaction]
    next_start: int  # the cursor (a log position) of the next page; 0: none


def read_work_then(work_id: str, moment: Moment) -> WorkThen:
    """The Work and its attempts, Waits and Timers as of ``moment``. Queries: the
    moment (2-3), the Work now (1), ``work_as_of`` (5-6), its Events up to then (1)."""

    def build(tx: Tx) -> WorkThen:
        work_now = tx.work(work_id)
        resolved = resolve(tx, moment)
        then = tx.work_as_of(work_id, resolved.version)
        events = tx.find_events(
            work_id=work_id,
            received_before=resolved.at + 1,
            newest_first=True,
            limit=TIMELINE_MAX + 1,
        )
        return WorkThen(
            now=tx.now,
            moment=resolved,
            then=then,
            work_now=work_now,
            events=events[:TIMELINE_MAX],
            more_events=len(events) > TIMELINE_MAX,
            horizon=tx.version_horizon(),
        )

    return read(build)


def read_work_changes(work_id: str, start: Moment, end: Moment | None, after: int) -> Changes:
    """The transactions that changed the Work between ``start`` and ``end`` (None:
    now), a page of whole transactions from log position ``after`` on, each with the
    fields every record's change made. A page costs the same few queries whatever the
    history: the moments, its rows, one seek statement per kind of record on it (the
    state after each record's last change on the page), the Work's current lists it
    needs, and one lookup per distinct Event it names."""

    def build(tx: Tx) -> Changes:
        work = tx.work(work_id)
        first = resolve(tx, start, "from")
        last = resolve(tx, end if end is not None else NOW, "to")
        rows = tx.work_versions(
            work_id,
            after=first.version,
            upto=last.version,
            start=after,
            limit=CHANGES_PAGE + 1,
        )
        rows, next_start = _whole(rows)
        done = transactions(tx, rows, Current(tx, work))
        return Changes(tx.now, work, first, last, done, next_start)

    return read(build)


def read_store_changes(start: Moment, end: Moment | None, after: int) -> Changes:
    """Every record's changes between ``start`` and ``end`` (None: now), Scopes and
    KV entries included, a page of whole transactions from log position ``after``
    on: the log's key range, then as ``read_work_changes`` with a point read for a
    record the page's rows leave unchanged since (at most a page of them)."""

    def build(tx: Tx) -> Changes:
        first = resolve(tx, start, "from")
        last = resolve(tx, end if end is not None else NOW, "to")
        rows = tx.version_changes(
            after=first.version, upto=last.version, start=after, limit=CHANGES_PAGE + 1
        )
        rows, next_start = _whole(rows)
        done = transactions(tx, rows, Current(tx, None))
        return Changes(tx.now, None, first, last, done, next_start)

    return read(build)


def _whole(rows: list[RecordVersion]) -> tuple[list[RecordVersion], int]:
    """At most a page of rows, in whole transactions, and the next page's cursor (the
    last position kept; 0 when nothing follows). A transaction larger than a page is
    shown whole."""
    if len(rows) <= CHANGES_PAGE:
        return rows, 0
    cut = rows[CHANGES_PAGE].version
    kept = [r for r in rows if r.version != cut] or [r for r in rows if r.version == cut]
    return kept, kept[-1].position
