"""What one ORM transaction knows of the rows it touched, and the writes it still owes.

``OrmTx`` keeps every record it read or wrote here, so an operation that rereads what
the same transaction just read or wrote (``BaseTx`` checks every rule against current
rows) costs no statement, and it keeps every write here until ``flush``, which sends
one ``executemany`` per table and kind of write. A row written several times in one
transaction (a Work created, given its executor, claimed) is written once, with its
final value. Nothing here decides a rule: ``BaseTx`` still checks every one, against
exactly the state it would read from the database.

Why the reads stay exact without a flush:

- Every buffered row is in the cache, so a point read of a row the cache does not
  hold finds in the database exactly what the transaction would: nothing of it is
  pending. Misses are cached too (a known-absent ID, key or delivery).
- A per-Work listing (attempts, Waits, Timers of one Work) reads the Work's rows from
  the database once, then answers from the cache, where this transaction's writes
  already are. A Work found absent at its first read has no such rows at all: rows of
  those tables are written only for a Work that exists, and Work is never deleted.
- An Event's sequence is allocated when it is accepted (``OrmTx._next_sequence``), as
  the database would have allocated it, so it is returned at once.

Every other read (queries, counts, facets, scans, due Timers, whole tables, KV, the
metadata) flushes first and then reads the database, which is then trivially exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import codec
from ..errors import Conflict
from ..records import Event, Route, StoredEvent, Table, Timer
from . import schema
from .schema import PER_WORK, TABLES

_OF_WORK = frozenset(TABLES[table].cls for table in PER_WORK)


def shared[T](cls: type[T], record: T, like: T | None = None) -> tuple[T, str | None]:
    """What the cache keeps of ``record``: the record itself when callers may share
    it (see ``codec.canonical``; ``like`` is the row's previous record), else its
    text, decoded afresh on every read."""
    kept = codec.canonical(cls, record, like)
    if kept is not None:
        return kept, None
    return record, codec.encode(record)


class RecentRecords:
    """Records this process recently wrote or read, by class and exact JSON text.

    A transaction that reads a row it (or an earlier transaction of this process)
    wrote finds the same text in the database: it takes the record already built
    instead of decoding the text again (the runtime claims in one transaction and
    completes in the next; the generator finishes each Work one transaction after
    starting it). Exact whatever happened in between, since the text is read from
    the database each time and equal text decodes to an equal record; only records
    ``codec.canonical`` lets callers share are kept.

    Bounded, so memory follows recent activity only: two generations, each of at
    most ``LIMIT`` records and ``BYTES`` characters of their texts (a record holds
    about as much again as its text), so the whole cache holds at most 16,384
    records and 16 MiB of text whatever the records' size; a text longer than
    ``LARGEST`` is never kept (decoding it is cheap next to reading it)."""

    LIMIT = 8192
    BYTES = 8 * 1024 * 1024
    LARGEST = 64 * 1024

    def __init__(self) -> None:
        self._young: dict[tuple[type[Any], str], Any] = {}
        self._old: dict[tuple[type[Any], str], Any] = {}
        self._young_bytes = 0

    def decode[T](self, cls: type[T], text: str) -> T:
        key = (cls, text)
        record: T | None = self._young.get(key) or self._old.get(key)
        if record is None:
            record = codec.decode(cls, text)
            self.remember(cls, text, record)
        return record

    def remember(self, cls: type[Any], text: str, record: Any) -> None:
        if len(text) > self.LARGEST or codec.shareable_check(cls) is None:
            return
        if len(self._young) >= self.LIMIT or self._young_bytes + len(text) > self.BYTES:
            self._old, self._young = self._young, {}
            self._young_bytes = 0
        self._young[(cls, text)] = record
        self._young_bytes += len(text)

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def text_size(self) -> int:
        """Characters of text held (both generations): what the caps bound."""
        return sum(len(text) for _, text in (*self._young, *self._old))


RECENT = RecentRecords()


@dataclass(slots=True)
class CachedRow:
    """One row as this transaction sees it. ``record`` None: no such row. A Timer row
    with ``live`` False is a deleted Timer's tombstone (its last record, whose
    revision is the floor for a recreated Timer)."""

    record: Any
    text: str | None = None  # the record's text when it must not be shared
    live: bool = True
    stored: bool = True  # a row with this ID is in the database (committed or flushed)
    # What the database row holds (its record and Timer liveness), when stored: an
    # UPDATE sets only the columns that differ, so SQLite rewrites only the indexes
    # on those (a state change leaves the kind, scope and creation indexes alone).
    base: Any = None
    base_live: bool = True
    # Columns the INSERT writes beside the record's own (``RecordTable.columns``): an
    # attempt's Scope, which its Work holds (``OrmTx._put``). Never updated after.
    extra: dict[str, Any] | None = None
    # The text the row was read with, while it is what the database holds: the
    # record's state before this transaction (the version log's), at no encoding.
    loaded: str | None = None

    def visible(self) -> Any:
        if self.record is None or not self.live:
            return None
        return self.record


@dataclass
class CachedTable:
    cls: type[Any]
    rows: dict[str, CachedRow] = field(default_factory=dict)
    dirty: dict[str, CachedRow] = field(default_factory=dict)
    # Work ID -> IDs of cached rows of that Work; ``complete`` Work have all theirs here.
    by_work: dict[str, set[str]] = field(default_factory=dict)
    complete: set[str] = field(default_factory=set)

    def keep(self, id: str, row: CachedRow) -> CachedRow:
        """Cache a row as read from the database."""
        if row.stored:
            row.base, row.base_live = row.record, row.live
        self.rows[id] = row
        self._index(id, row.record)
        return row

    def _index(self, id: str, record: Any, previous: Any = None) -> None:
        if record is not None and self.cls in _OF_WORK:
            if previous is not None:  # a Timer re-created, or put again, for another Work
                self.by_work.get(previous.work_id, set()).discard(id)
            self.by_work.setdefault(record.work_id, set()).add(id)

    def read(self, row: CachedRow) -> Any:
        record = row.record
        if record is None or not row.live:
            return None
        if row.text is None:
            return record
        return codec.decode(self.cls, row.text)  # a fresh copy: see ``shared``

    def write(
        self, id: str, record: Any, create: bool, extra: dict[str, Any] | None = None
    ) -> None:
        row = self.rows.get(id)
        if row is None:
            # Not read first (BaseTx always reads first): as an INSERT or UPDATE would.
            row = self.keep(id, CachedRow(None, stored=not create))
        elif create and row.visible() is not None and self.cls is not Timer:
            # What the INSERT would have met (a Timer's row is overwritten instead).
            raise Conflict(f"constraint violated: {self.cls.__name__} {id!r} exists")
        previous = row.record
        row.record, row.text = shared(self.cls, record, previous)
        row.live = True
        if extra is not None:
            row.extra = extra
        # Only a Timer's Work can change (attempts and Waits keep theirs): re-file it.
        if previous is None or (self.cls is Timer and previous.work_id != record.work_id):
            self._index(id, row.record, previous)
        self.dirty[id] = row

    def bury(self, id: str) -> None:
        """A deleted Timer: its row stays as the tombstone holding its revision."""
        row = self.rows[id]
        row.live = False
        self.dirty[id] = row

    def of_work(self, work_id: str) -> list[CachedRow]:
        return [self.rows[i] for i in sorted(self.by_work.get(work_id, ()))]


@dataclass(slots=True)
class CachedEvent:
    stored: StoredEvent
    in_db: bool  # inserted (committed or flushed); else an INSERT is pending


@dataclass
class EventCache:
    by_id: dict[str, CachedEvent | None] = field(default_factory=dict)
    # (source, delivery_id) -> the Event ID holding that delivery identity, or None.
    deliveries: dict[tuple[str, str], str | None] = field(default_factory=dict)
    dirty: dict[str, CachedEvent] = field(default_factory=dict)
    # The sequence of this transaction's last accepted Event (0: none yet).
    last_sequence: int = 0

    def keep(self, stored: StoredEvent, in_db: bool) -> CachedEvent:
        e = stored.event
        row = self.by_id.get(e.id)
        if row is None:
            row = self.by_id[e.id] = CachedEvent(stored, in_db)
            self.deliveries[(e.source, e.delivery_id)] = e.id
        return row

    def by_delivery(self, source: str, delivery_id: str) -> StoredEvent | None:
        event_id = self.deliveries[(source, delivery_id)]
        row = None if event_id is None else self.by_id[event_id]
        return None if row is None else row.stored

    def insert(self, event: Event, sequence: int) -> None:
        kept, _ = shared(Event, event)
        row = CachedEvent(StoredEvent(kept, sequence), in_db=False)
        self.by_id[event.id] = row
        self.deliveries[(event.source, event.delivery_id)] = event.id
        self.dirty[event.id] = row
        self.last_sequence = sequence

    def update(self, event_id: str, scope_id: str = "", route: Route | None = None) -> None:
        row = self.by_id[event_id]
        if row is None:  # BaseTx read it first; never absent
            raise KeyError(event_id)
        s = row.stored
        # A constructor, not dataclasses.replace: this runs for most Events.
        row.stored = StoredEvent(s.event, s.sequence, scope_id or s.scope_id, route or s.route)
        self.dirty[event_id] = row


# ``{seq}``: the dialect's expression for the sequence value (``Dialect.sequence_value``).
_EVENT_INSERT = (
    f"INSERT INTO {schema.EVENT} (seq, id, source, delivery_id, type, work_id, causation_id, "
    "scope_id, route_work_id, disposition, routed_ns, data) "
    "VALUES ({seq}, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
_VERSION_INSERT = (
    f"INSERT INTO {schema.VERSION} (position, at_ns, kind, record_id, key, data, value, "
    "event_seq, execution_id, work_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
_EVENT_KEY_INSERT = f"INSERT INTO {schema.EVENT_KEY} (seq, source, external_id) VALUES (%s, %s, %s)"
_EVENT_UPDATE = (
    f"UPDATE {schema.EVENT} SET scope_id = %s, route_work_id = %s, disposition = %s, "
    "routed_ns = %s WHERE id = %s"
)


@dataclass
class WriteBehind:
    """The whole transaction's cache and pending writes."""

    tables: dict[Table, CachedTable] = field(
        default_factory=lambda: {t: CachedTable(spec.cls) for t, spec in TABLES.items()}
    )
    events: EventCache = field(default_factory=EventCache)
    # (source, external_id) -> owning Work ID, or None (known unowned).
    keys: dict[tuple[str, str], str | None] = field(default_factory=dict)
    new_keys: list[tuple[str, str, str, int]] = field(default_factory=list)
    # Statements sent after the row writes at the next flush (the tally upsert, the
    # clock row), so that they travel with them: (SQL, parameters of one execution).
    after: list[tuple[str, list[Any]]] = field(default_factory=list)
    # The version log's rows (``storage.orm.versions``), appended at commit.
    versions: list[list[Any]] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        return bool(
            self.new_keys
            or self.after
            or self.versions
            or self.events.dirty
            or any(t.dirty for t in self.tables.values())
        )

    def statements(self, sequence: str = "%s") -> list[tuple[str, list[Any]]]:
        """The pending writes as (SQL, rows) for ``executemany``, then forgets them:
        per table one INSERT, and one UPDATE per set of changed columns. Rows are
        encoded here, once per row, whatever number of writes they took. ``sequence``
        is the SQL an Event row's sequence is written as (its parameter: ``%s``)."""
        out: list[tuple[str, list[Any]]] = []
        for table, cache in self.tables.items():
            spec = TABLES[table]
            name = spec.name
            inserts: list[list[Any]] = []
            names: list[str] = []
            updates: dict[tuple[str, ...], list[list[Any]]] = {}
            # In key order: consecutive rows land in the same index pages, which
            # SQLite then finds in its cache (a random UUID per row otherwise).
            for id, row in sorted(cache.dirty.items()):
                values = spec.columns(row.record, row.live)
                if row.text is not None:
                    data = row.text
                else:
                    data = codec.encode(row.record)
                    RECENT.remember(cache.cls, data, row.record)
                if row.stored:
                    if row.base is None:  # written unread (not by BaseTx): every column
                        changed = tuple(values)
                    else:
                        stored = spec.columns(row.base, row.base_live)
                        changed = tuple(n for n, v in values.items() if stored[n] != v)
                    updates.setdefault(changed, []).append(
                        [*(values[n] for n in changed), data, id]
                    )
                else:
                    if row.extra:
                        values = {**values, **row.extra}
                    names = list(values)
                    inserts.append([id, *values.values(), data])
                row.stored, row.base, row.base_live = True, row.record, row.live
            cache.dirty.clear()
            if inserts:
                marks = ", ".join(["%s"] * (len(names) + 2))
                sql = f"INSERT INTO {name} (id, {', '.join(names)}, data) VALUES ({marks})"
                out.append((sql, inserts))
            for changed, rows in updates.items():
                assignments = "".join(f"{n} = %s, " for n in changed)
                out.append((f"UPDATE {name} SET {assignments}data = %s WHERE id = %s", rows))
        out.extend(self._event_statements(sequence))
        if self.new_keys:
            sql = (
                f"INSERT INTO {schema.KEY} (source, external_id, work_id, ordinal) "
                "VALUES (%s, %s, %s, %s)"
            )
            out.append((sql, list(self.new_keys)))
            self.new_keys.clear()
        if self.versions:
            out.append((_VERSION_INSERT, self.versions))
            self.versions = []
        out.extend((sql, [params]) for sql, params in self.after)
        self.after.clear()
        return out

    def _event_statements(self, sequence: str) -> list[tuple[str, list[Any]]]:
        inserts: list[list[Any]] = []
        updates: list[list[Any]] = []
        keys: list[list[Any]] = []
        for row in self.events.dirty.values():
            stored, e = row.stored, row.stored.event
            route = stored.route or Route("", "", 0)
            routing = [stored.scope_id, route.work_id, route.disposition, route.routed_at]
            if row.in_db:
                updates.append([*routing, e.id])
                continue
            envelope = [e.id, e.source, e.delivery_id, e.type, e.work_id, e.causation_id]
            inserts.append([stored.sequence, *envelope, *routing, codec.encode(e)])
            keys.extend([stored.sequence, k.source, k.external_id] for k in e.keys)
            row.in_db = True
        self.events.dirty.clear()
        # Inserts in sequence order: appends to the table's B-tree, as single INSERTs did.
        inserts.sort(key=lambda values: values[0])
        out = []
        if inserts:
            out.append((_EVENT_INSERT.format(seq=sequence), inserts))
        if keys:
            out.append((_EVENT_KEY_INSERT, keys))
        if updates:
            out.append((_EVENT_UPDATE, updates))
        return out
