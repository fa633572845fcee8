"""Everything about one correlation key, in one ``storage.view``: the Work that owns it,
the Events carrying it (newest first, keyset pages on the acceptance sequence), and the
Waits listening on it.

Why these and no more: a key has at most one owner (the contract's one-owner rule; a
terminal owner keeps it, a successor takes a new key), a Wait's keys belong to its Work
(so the Waits on a key are among its owner's), and the Events carrying it are read
through the ``event_key`` index. KV entries carry no correlation key in the contract
(a namespace and a key of the executor's own), so the page says so rather than
guessing which of them "share" it.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.events.filters import SeqCursor
from console.polling import polled_view
from storage import CorrelationKey, NotFound, StoredEvent, Tx, Wait, Work


@dataclass(frozen=True, slots=True)
class KeyPage:
    now: int
    stamp: str
    key: CorrelationKey
    work: Work | None  # the owner, None when no Work holds the key
    waits: list[Wait]  # the owner's Waits listening on the key, newest first
    events: list[StoredEvent]  # newest first
    older: int  # "before" cursor of the older page, 0 when none
    newer: int  # "after" cursor of the newer page, 0 when this is the newest


def read_key(key: CorrelationKey, cursor: SeqCursor, size: int, seen: str = "") -> KeyPage | None:
    """Queries: the stamp, the owner (its key row, then its Work), its Waits (one), and
    one ``find_events(key=...)`` of at most ``size + 1`` Events."""

    def build(tx: Tx, stamp: str) -> KeyPage:
        try:
            work: Work | None = tx.work_by_key(key)
        except NotFound:
            work = None
        waits: list[Wait] = []
        if work is not None:
            waits = [w for w in tx.waits(work.id) if key in w.keys]
            waits.sort(key=lambda w: (w.created_at, w.id), reverse=True)
        if cursor.after:
            found = tx.find_events(key=key, after=cursor.after, limit=size + 1)
            events = found[:size][::-1]
            newer = events[0].sequence if len(found) > size else 0
            older = events[-1].sequence if events else cursor.after + 1
        else:
            found = tx.find_events(key=key, before=cursor.before, newest_first=True, limit=size + 1)
            events = found[:size]
            older = events[-1].sequence if len(found) > size else 0
            newer = (events[0].sequence if events else cursor.before - 1) if cursor.before else 0
        return KeyPage(tx.now, stamp, key, work, waits, events, older, newer)

    return polled_view(seen, build)
