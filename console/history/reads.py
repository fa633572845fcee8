"""A Work in the past, from the record-version log (``storage.versions``): the Work
page as of a moment, and what changed in it between two moments. One
``storage.view`` a page; the cost follows the Work's own changes since the moment,
never the store's size (the log's per-record and per-Work indexes).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.history.moments import NOW, Moment, Resolved, resolve
from console.polling import read
from storage import (
    Execution,
    NotFound,
    RecordVersion,
    StoredEvent,
    Timer,
    Tx,
    Wait,
    Work,
    WorkAsOf,
    from_ns,
)

TIMELINE_MAX = 20  # the Work's latest Events up to the moment
CHANGES_PAGE = 40  # log rows a page of changes reads (whole transactions)
SHOWN_MAX = 160  # characters of one value in a field's before/after


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
class FieldChange:
    name: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class RecordChange:
    """One record's change in one transaction: ``what`` it is ("attempt 3", "Wait
    w1", ...), created, deleted, or the fields that differ."""

    kind: str
    id: str
    what: str
    created: bool
    deleted: bool
    fields: list[FieldChange]


@dataclass(frozen=True, slots=True)
class Transaction:
    """One transaction that changed the Work: its store version and time, the Event
    it accepted first (with its actor), the attempt whose lease it ran under."""

    version: int
    at: int
    event: StoredEvent | None
    event_sequence: int
    lease: Execution | None
    lease_id: str
    changes: list[RecordChange]


@dataclass(frozen=True, slots=True)
class WorkChanges:
    now: int
    work: Work
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


def read_work_changes(work_id: str, start: Moment, end: Moment | None, after: int) -> WorkChanges:
    """The transactions that changed the Work between ``start`` and ``end`` (None:
    now), a page of whole transactions from log position ``after`` on, each with the
    fields every record's change made. A page costs the same few queries whatever the
    history: the moments, its rows, one seek statement per kind of record on it (the
    state after each record's last change on the page), the Work's current lists it
    needs, and one lookup per distinct Event it names."""

    def build(tx: Tx) -> WorkChanges:
        work = tx.work(work_id)
        first = resolve(tx, start)
        last = resolve(tx, end if end is not None else NOW)
        rows = tx.work_versions(
            work_id,
            after=first.version,
            upto=last.version,
            start=after,
            limit=CHANGES_PAGE + 1,
        )
        next_start = 0
        if len(rows) > CHANGES_PAGE:
            # Whole transactions only: the next page starts at the cut one.
            cut = rows[CHANGES_PAGE].version
            kept = [r for r in rows if r.version != cut]
            rows = kept or [r for r in rows if r.version == cut]
            next_start = rows[-1].position
        transactions = _transactions(tx, rows, Current(tx, work))
        return WorkChanges(tx.now, work, first, last, transactions, next_start)

    return read(build)


class Current:
    """The Work's records as they are now, each list read once when first needed."""

    def __init__(self, tx: Tx, work: Work) -> None:
        self.tx = tx
        self.work = work
        self._lists: dict[str, dict[str, Any]] = {}

    def records(self, kind: str) -> dict[str, Any]:
        if kind not in self._lists:
            found: list[Any] = []
            if kind == "execution":
                found = self.tx.executions(self.work.id)
            elif kind == "wait":
                found = self.tx.waits(self.work.id)
            elif kind == "timer":
                found = self.tx.timers(self.work.id)
            self._lists[kind] = {r.id: r for r in found}
        return self._lists[kind]

    def state(self, kind: str, id: str) -> Any:
        """The record now (None: gone), a Timer moved to another Work included."""
        if kind == "work":
            return self.work
        found = self.records(kind).get(id)
        if found is None and kind == "timer":
            try:
                found = self.tx.timer(id)
            except NotFound:
                return None
        return found


def _afters(tx: Tx, rows: list[RecordVersion], current: Current) -> list[Any]:
    """Each row's record as the change left it: the state before of its next row on
    the page; for its last row on the page, of its first row after it
    (``later_versions``: one seek a record), else its state now."""
    afters: list[Any] = [None] * len(rows)
    following: dict[tuple[str, str], Any] = {}
    last: dict[tuple[str, str], int] = {}
    for i in reversed(range(len(rows))):
        key = (rows[i].kind, rows[i].id)
        if key in following:
            afters[i] = following[key]
        else:
            last[key] = i
        following[key] = rows[i].before
    by_kind: dict[str, list[tuple[str, int]]] = {}
    for (kind, id), i in last.items():
        by_kind.setdefault(kind, []).append((id, rows[i].version))
    for kind, wanted in sorted(by_kind.items()):
        later = tx.later_versions(kind, wanted)  # type: ignore[arg-type]
        for id, _ in wanted:
            found = later.get(id)
            after = found.before if found is not None else current.state(kind, id)
            afters[last[(kind, id)]] = after
    return afters


def _transactions(tx: Tx, rows: list[RecordVersion], current: Current) -> list[Transaction]:
    """The page's rows as transactions, each change with the fields it made."""
    afters = _afters(tx, rows, current)
    events: dict[int, StoredEvent | None] = {}
    out: list[Transaction] = []
    for row, after in zip(rows, afters, strict=True):
        if not out or out[-1].version != row.version:
            sequence = row.event_sequence
            if sequence and sequence not in events:
                found = tx.events(after=sequence - 1, limit=1)
                events[sequence] = found[0] if found and found[0].sequence == sequence else None
            lease = current.records("execution").get(row.execution_id) if row.execution_id else None
            out.append(
                Transaction(
                    version=row.version,
                    at=row.at,
                    event=events.get(sequence),
                    event_sequence=sequence,
                    lease=lease,
                    lease_id=row.execution_id,
                    changes=[],
                )
            )
        out[-1].changes.append(_change(row, after))
    return out


def _change(row: RecordVersion, after: Any) -> RecordChange:
    before = row.before
    record = after if after is not None else before
    return RecordChange(
        kind=row.kind,
        id=row.id,
        what=_what(row.kind, row.id, record),
        created=before is None and after is not None,
        deleted=before is not None and after is None,
        fields=list(field_changes(before, after))
        if before is not None and after is not None
        else [],
    )


def _what(kind: str, id: str, record: Any) -> str:
    if isinstance(record, Execution):
        return f"attempt {record.attempt}"
    if isinstance(record, Wait):
        return f"Wait {id}"
    if isinstance(record, Timer):
        return f"Timer {id}"
    if isinstance(record, Work):
        return "the Work"
    return f"{kind} {id}"


def field_changes(before: Any, after: Any) -> Iterable[FieldChange]:
    """The fields of two versions of one record that differ, shown short (a time,
    a field named ``*_at``, as a UTC time)."""
    for field in dataclasses.fields(before):
        old, new = getattr(before, field.name), getattr(after, field.name)
        if old != new:
            if field.name.endswith("_at"):
                yield FieldChange(field.name, instant(old), instant(new))
            else:
                yield FieldChange(field.name, shown(old), shown(new))


def instant(value: Any) -> str:
    """Nanoseconds as a UTC time to the millisecond (0: none)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return shown(value) if value else "—"
    return from_ns(value).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def shown(value: Any) -> str:
    """A field's value in a few words: enums by value, records by their fields,
    long text cut."""
    if isinstance(value, enum.Enum):
        text = str(value.value)
    elif value is None:
        text = "—"
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = (f"{f.name}={shown(getattr(value, f.name))}" for f in dataclasses.fields(value))
        text = ", ".join(parts)
    elif isinstance(value, tuple | list):
        text = "[" + ", ".join(shown(v) for v in value) + "]"
    elif isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
    else:
        text = str(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 1] + "…"
