"""The KV inspector's reads, each page in ONE ``storage.view``.

- **Namespaces**: ``kv_namespaces`` for one row more than the page (which says whether
  more follow): one statement of index seeks, one per namespace, whatever the keys.
- **A namespace's keys**: ``kv_list`` (now) or ``kv_list_as_of`` (then) for one row
  more than the page, each key's value, and its last write from the version log: the
  key's newest row (at or before the version, as of one), one read of the log's
  per-record index a key. A row names the attempt whose lease the writing
  transaction held (its Work links from it) or none (the control plane), and the
  first Event it accepted; each distinct attempt and Event is read once. A key with
  no row was last written before the log's horizon (pruned, or before the upgrade
  that began the log), and the page says so rather than guess.

So a page of n keys costs 6 + n queries, one more per distinct attempt and Event
among its writes (at most 6 + 3n); as of a version two more (the horizon, read again
by ``kv_list_as_of``, and the changed keys' first rows; two again for each further
batch when keys created since fill one), as of a time one or two more (``version_at``,
and the store's version for a time after the last commit). tests/console/test_kv.py
pins them, whatever the namespace, the store or the log hold: a runtime's writes come
from few attempts, the control plane's from none.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.history.moments import event_at, version_of
from console.kv.filters import KvFilter
from console.kv.values import Shown, show
from console.polling import read
from storage import Execution, NotFound, RecordVersion, StoredEvent, Tx


@dataclass(frozen=True, slots=True)
class NamespacePage:
    now: int
    rows: list[str]
    next_after: str  # the cursor of the next page ("": none)


@dataclass(frozen=True, slots=True)
class Write:
    """The transaction that wrote a value: its version and time, the attempt it ran
    under (None: the control plane; ``execution_id`` names one no longer stored),
    and the first Event it accepted (None: none)."""

    version: int
    at: int
    execution_id: str
    execution: Execution | None
    event_sequence: int
    event: StoredEvent | None


@dataclass(frozen=True, slots=True)
class KeyRow:
    key: str
    value: Shown
    write: Write | None  # None: written before the log's horizon


@dataclass(frozen=True, slots=True)
class KeyPage:
    now: int
    rows: list[KeyRow]
    next_after: str  # the cursor of the next page ("": none)
    version: int  # the store's version now
    horizon: int  # the log is whole from this version on
    as_of: int | None  # the version shown, None: now
    known: bool  # False: ``as_of`` is older than the horizon, nothing is shown


def read_namespaces(f: KvFilter, after: str, now: int | None = None) -> NamespacePage:
    """A page of the namespaces holding keys now; ``as_of``, which each one's link
    keeps, is checked as a page of keys checks it."""

    def build(tx: Tx) -> NamespacePage:
        if f.as_of is not None:
            _version(tx, f, tx.store_version())
        found = tx.kv_namespaces(after, f.size + 1)
        rows = found[: f.size]
        return NamespacePage(tx.now, rows, rows[-1] if len(found) > f.size else "")

    return read(build, now)


def read_keys(f: KvFilter, after: str, now: int | None = None) -> KeyPage:
    """A page of ``f.namespace``'s keys, now or as of ``f.as_of``; FilterError for a
    version the store has not reached."""

    def build(tx: Tx) -> KeyPage:
        latest, horizon = tx.store_version(), tx.version_horizon()
        version = _version(tx, f, latest)
        limit = f.size + 1
        if version is None:
            found, known = tx.kv_list(f.namespace, f.prefix, after, limit), True
        else:
            then = tx.kv_list_as_of(f.namespace, version, f.prefix, after, limit)
            found, known = then.entries, then.known
        entries = found[: f.size]
        last = {key: _last_write(tx, f.namespace, key, version) for key, _ in entries}
        writes = _writes(tx, [r for r in last.values() if r is not None])
        rows = [
            KeyRow(key, show(value), writes[row.position] if row else None)
            for key, value in entries
            for row in [last[key]]
        ]
        next_after = entries[-1][0] if len(found) > f.size else ""
        return KeyPage(tx.now, rows, next_after, latest, horizon, version, known)

    return read(build, now)


def _version(tx: Tx, f: KvFilter, latest: int) -> int | None:
    """The version ``as_of`` names (None: now), as every page of the past reads it
    (``history.moments.version_of``): a version the store has not reached is refused
    rather than shown as now (the URL would change meaning later), an Event's
    sequence no Event has is a 404."""
    if f.as_of is None:
        return None
    return version_of(tx, f.as_of.moment, "as_of", latest)


def _last_write(tx: Tx, namespace: str, key: str, version: int | None) -> RecordVersion | None:
    """The key's newest row (at or before ``version``): the write of its value then."""
    if version == 0:
        return None  # nothing was written as of version 0 (and upto=0 is unbounded)
    rows = tx.record_versions("kv", namespace, key, upto=version or 0, newest_first=True, limit=1)
    return rows[0] if rows else None


def _writes(tx: Tx, rows: list[RecordVersion]) -> dict[int, Write]:
    """Each row's Write, reading each distinct attempt and Event once."""
    attempts: dict[str, Execution | None] = {}
    for x in sorted({r.execution_id for r in rows if r.execution_id}):
        try:
            attempts[x] = tx.execution(x)
        except NotFound:
            attempts[x] = None
    events: dict[int, StoredEvent | None] = {}
    for seq in sorted({r.event_sequence for r in rows if r.event_sequence}):
        events[seq] = event_at(tx, seq)
    return {
        r.position: Write(
            r.version,
            r.at,
            r.execution_id,
            attempts.get(r.execution_id),
            r.event_sequence,
            events.get(r.event_sequence),
        )
        for r in rows
    }
