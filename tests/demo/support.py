"""Reading what a simulator or the generator left in a store."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from storage import Store, Tx, view
from storage.run_records import RunQuery, encode


@dataclass(frozen=True)
class Census:
    """Counts by state of every record kind, and a digest of identities."""

    works: Counter[str]
    attempts: Counter[str]
    waits: Counter[str]
    timers: Counter[str]
    dispositions: Counter[str]
    events: int
    derived: int
    unscoped: int
    children: int
    runs: dict[str, int]  # run ID -> revision
    digest: tuple[object, ...]


def census(store: Store) -> Census:
    def read(tx: Tx) -> Census:
        works, xs, waits = tx.works(), tx.executions(), tx.waits()
        timers, events = tx.timers(), tx.events()
        runs = sorted(tx.run_records(RunQuery(limit=0)), key=lambda r: r.record.run_id)
        # Sequences relative to the first Event: a database flushed between tests
        # keeps counting (AUTOINCREMENT is never reused), a fresh memory store does not.
        base = events[0].sequence - 1 if events else 0
        digest = (
            tuple((w.id, w.kind, w.state.value, w.parent_id, w.keys) for w in works),
            tuple((x.id, x.work_id, x.attempt, x.state.value, x.epoch) for x in xs),
            tuple((w.id, w.state.value, w.woken_by, w.after_sequence - base) for w in waits),
            tuple((t.id, t.purpose, t.fire_at) for t in timers),
            tuple(
                (e.id, e.event.type, e.sequence - base, e.route.disposition if e.route else "")
                for e in events
            ),
            # Run records by content (their times follow whichever clock saved them).
            tuple((r.record.run_id, r.record.revision, encode(r.record)) for r in runs),
        )
        return Census(
            works=Counter(w.state.value for w in works),
            attempts=Counter(x.state.value for x in xs),
            waits=Counter(w.state.value for w in waits),
            timers=Counter(t.purpose for t in timers),
            dispositions=Counter(e.route.disposition if e.route else "" for e in events),
            events=len(events),
            derived=sum(bool(e.event.causation_id) for e in events),
            unscoped=sum(not e.scope_id for e in events),
            children=sum(bool(w.parent_id) for w in works),
            runs={r.record.run_id: r.record.revision for r in runs},
            digest=digest,
        )

    return view(store, None, read)
