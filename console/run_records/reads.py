"""The Runs pages' reads: one ``storage.view`` per page (``console.polling``).

Run records live in the coordination store's database, so a run page polls with the
same stamp as every other page: a Session's save is a ``transact``, which moves the
store version.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.polling import polled_view, read
from console.run_records.filters import RunFilter, RunKey
from storage import NotFound, Tx
from storage.run_records import RunQuery, StoredRun

# How many rows sharing a run ID's prefix the unreadable-record page looks through to
# find that record's stored columns (the exact ID sorts among them by update time).
UNREADABLE_SCAN = 200


@dataclass(frozen=True, slots=True)
class RunListPage:
    now: int
    stamp: str
    rows: list[StoredRun]  # newest update first; a row that does not decode has .error
    count: int  # rows the whole filter matches
    next_key: RunKey | None


def read_run_list(
    f: RunFilter, after: RunKey | None, seen: str = "", limit: int = 0
) -> RunListPage | None:
    """A page of run records in keyset order and the filter's count. Queries: the stamp
    (none: the View's snapshot read it), the page (1), the count (1). ``limit``: how
    many rows to read (the page size by default; a status filter reads a scan's worth
    and keeps the matches)."""
    limit = limit or f.size

    def build(tx: Tx, stamp: str) -> RunListPage:
        rows = tx.run_records(f.query(after=after, limit=limit + 1))
        has_next, rows = len(rows) > limit, rows[:limit]
        last = rows[-1] if rows and has_next else None
        return RunListPage(
            now=tx.now,
            stamp=stamp,
            rows=rows,
            count=tx.count_run_records(f.query()),
            next_key=(last.updated_ns, last.record.run_id) if last else None,
        )

    return polled_view(seen, build)


@dataclass(frozen=True, slots=True)
class RunDetail:
    now: int
    stamp: str
    stored: StoredRun


def read_run(run_id: str, seen: str = "") -> RunDetail | None:
    """One run record, decoded. ``NotFound`` for an unknown run; ``Corrupt`` or
    ``RecordsNewer`` (from the store) for one this code cannot read. Queries: the
    stamp (none: the View's snapshot read it), the record (1)."""

    def build(tx: Tx, stamp: str) -> RunDetail:
        stored = tx.run_record(run_id)
        if stored is None:
            raise NotFound(f"No run record {run_id!r}")
        return RunDetail(tx.now, stamp, stored)

    return polled_view(seen, build)


def read_unreadable_run(run_id: str) -> StoredRun | None:
    """The stored columns (format, revision, times) of a record that does not decode:
    the list's row for it, which carries the error instead of the record."""

    def find(tx: Tx) -> StoredRun | None:
        rows = tx.run_records(RunQuery(run_id_prefix=run_id, limit=UNREADABLE_SCAN))
        return next((r for r in rows if r.record.run_id == run_id), None)

    return read(find)
