"""What the record-version log says a page of changes did (``storage.versions``):
each transaction with its Event, actor and lease, and each record's change field by
field, before and after. The state a change left is the state before of the
record's next row on the page, else of its first row after it (one index seek a
record, ``Tx.later_versions``), else the record as it is now."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.history.moments import event_at
from storage import (
    Execution,
    NotFound,
    RecordVersion,
    StoredEvent,
    Timer,
    Tx,
    Wait,
    Work,
    from_ns,
)

SHOWN_MAX = 160  # characters of one value in a field's before/after


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
    key: str  # a KV entry's key ("" otherwise)
    work_id: str  # the Work the record is of ("" for a Scope or KV entry)
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


class Current:
    """Records as they are now: of one Work, its lists read once when first needed
    (whatever the Work's size, a few statements); store-wide (``work`` None), one
    point read a record."""

    def __init__(self, tx: Tx, work: Work | None) -> None:
        self.tx = tx
        self.work = work
        self._lists: dict[str, dict[str, Any]] = {}

    def records(self, kind: str) -> dict[str, Any]:
        if self.work is None:
            return {}
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

    def state(self, kind: str, id: str, key: str = "") -> Any:
        """The record now (None: gone): from the Work's lists when it has one, else
        (another Work's Timer, or store-wide) read by its ID."""
        if self.work is not None:
            if kind == "work" and id == self.work.id:
                return self.work
            found = self.records(kind).get(id)
            if found is not None or kind in ("execution", "wait"):
                return found  # an attempt or Wait never leaves its Work
        try:
            if kind == "kv":
                return self.tx.kv_get(id, key)
            return getattr(self.tx, kind)(id)
        except NotFound:
            return None


def _afters(tx: Tx, rows: list[RecordVersion], current: Current) -> list[Any]:
    """Each row's record as the change left it: the state before of its next row on
    the page; for its last row on the page, of its first row after it
    (``later_versions``: one seek a record), else its state now."""
    afters: list[Any] = [None] * len(rows)
    following: dict[tuple[str, str, str], Any] = {}
    last: dict[tuple[str, str, str], int] = {}
    for i in reversed(range(len(rows))):
        record = (rows[i].kind, rows[i].id, rows[i].key)
        if record in following:
            afters[i] = following[record]
        else:
            last[record] = i
        following[record] = rows[i].before
    by_kind: dict[str, list[tuple[str, int]]] = {}
    for (kind, id, key), i in last.items():
        if kind == "kv":  # an entry's next row: a seek of its own
            later = tx.record_versions("kv", id, key, after=rows[i].version, limit=1)
            afters[i] = later[0].before if later else current.state(kind, id, key)
        else:
            by_kind.setdefault(kind, []).append((id, rows[i].version))
    for kind, wanted in sorted(by_kind.items()):
        found = tx.later_versions(kind, wanted)  # type: ignore[arg-type]
        for id, _ in wanted:
            row = found.get(id)
            after = row.before if row is not None else current.state(kind, id)
            afters[last[(kind, id, "")]] = after
    return afters


def transactions(tx: Tx, rows: list[RecordVersion], current: Current) -> list[Transaction]:
    """The page's rows as transactions, each change with the fields it made."""
    work_id = current.work.id if current.work is not None else ""
    afters = _afters(tx, rows, current)
    events: dict[int, StoredEvent | None] = {}
    out: list[Transaction] = []
    for row, after in zip(rows, afters, strict=True):
        if not out or out[-1].version != row.version:
            sequence = row.event_sequence
            if sequence and sequence not in events:
                events[sequence] = event_at(tx, sequence)
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
        out[-1].changes.append(_change(row, after, work_id))
    return out


def _change(row: RecordVersion, after: Any, work_id: str) -> RecordChange:
    before = row.before
    record = after if after is not None else before
    if before is None or after is None:
        fields = []
    elif row.kind == "kv":
        fields = [FieldChange("value", shown(before), shown(after))]
    else:
        fields = list(field_changes(before, after))
    return RecordChange(
        kind=row.kind,
        id=row.id,
        key=row.key,
        work_id=row.work_id,
        what=_what(row, record, work_id),
        created=before is None and after is not None,
        deleted=before is not None and after is None,
        fields=fields,
    )


def _what(row: RecordVersion, record: Any, work_id: str) -> str:
    """What the record is, in the page's words ("the Work" on its own page)."""
    if isinstance(record, Execution):
        return f"attempt {record.attempt}"
    if isinstance(record, Wait):
        return f"Wait {row.id}"
    if isinstance(record, Timer):
        return f"Timer {row.id}"
    if isinstance(record, Work):
        return "the Work" if row.id == work_id else f"Work {row.id}"
    if row.kind == "kv":
        return f"KV {row.id} / {row.key}"
    return f"Scope {row.id}" if row.kind == "scope" else f"{row.kind} {row.id}"


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
