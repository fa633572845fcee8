"""The record-version log (issue 32): what every writing transaction changed, as it
was before.

Each transaction that writes appends, in the same transaction, one ``RecordVersion``
per record it changed (Work, attempt, Wait, Timer, Scope, or KV entry): the record as
it stood *before* the transaction, stamped with the transaction's position in the
acceptance order (``Tx.store_version``, which every writing commit raises by one), its
``Guard.now``, the first Event it accepted and the attempt whose lease it ran under.

Why the state before, not after: the state at a moment is then the current state
with every later change undone, so a record that never changed again needs no row at
all, and pruning is a plain cut of the oldest rows. The state of a record as of
version ``v`` is the ``before`` of its first row with a version above ``v``, or its
current state when it has none; it is known for every ``v`` at or above the log's
horizon (``Tx.version_horizon``): the version the log began at (a store created
empty: 0; one upgraded: its version at the upgrade) or the last version a prune cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .records import Nanos, Table

# What a row names: a record table, or a KV entry (its namespace as ``id``).
VersionKind = Literal["work", "execution", "scope", "timer", "wait", "kv"]
VERSION_KINDS: tuple[VersionKind, ...] = ("work", "execution", "scope", "timer", "wait", "kv")
RECORD_KINDS: tuple[Table, ...] = ("work", "execution", "scope", "timer", "wait")


@dataclass(frozen=True, slots=True)
class RecordVersion:
    """One record as it was before the transaction ``version`` changed it.

    ``before`` is the record (a ``Work``, ``Execution``, ...; for ``kind`` "kv" the
    value's bytes) or None when the transaction created it. ``position`` is the
    row's place in the log, increasing with ``version``; pages of changes resume
    after it. ``event_sequence`` is the first Event the transaction accepted or
    routed (its cause: a router's transaction routes an Event accepted earlier; 0:
    none), ``execution_id`` the attempt whose lease it ran under ("" for the trusted
    control plane: the console, the runtime's router). ``work_id`` is the Work the
    record is of (a Work's own ID; an attempt's, Wait's or Timer's Work; "" for a
    Scope or KV entry): the Work it was of before the change, or after it when the
    change created it (a Timer moved to another Work is filed under the one it left)."""

    position: int
    version: int
    at: Nanos
    kind: VersionKind
    id: str
    key: str
    before: Any
    event_sequence: int
    execution_id: str
    work_id: str


@dataclass(frozen=True, slots=True)
class RecordAt:
    """A record as of a version: ``record`` (None: it did not exist then), and
    ``known`` False when the version is older than the log's horizon, so the store
    cannot say (``record`` is then None too)."""

    record: Any
    known: bool = True


@dataclass(frozen=True, slots=True)
class WorkAsOf:
    """A Work and its records as they were once a version had committed
    (``Tx.work_as_of``): ``work`` None when it did not exist yet; ``known`` False
    when the version is older than the log's horizon (everything else empty then).
    Attempts by number, Waits and Timers by ID."""

    work: Any
    executions: list[Any]
    waits: list[Any]
    timers: list[Any]
    known: bool = True


@dataclass(frozen=True, slots=True)
class KvAsOf:
    """A namespace's KV entries as they were once a version had committed
    (``Tx.kv_list_as_of``): (key, value) pairs by key; ``known`` False when the
    version is older than the log's horizon (``entries`` empty then)."""

    entries: list[tuple[str, bytes]]
    known: bool = True


# How many rows one ``prune_versions`` call deletes at most (a transaction's worth).
PRUNE_BATCH = 5000


@dataclass(frozen=True, slots=True)
class WorkMark:
    """What changes whenever anything of a Work's page changes (``Tx.work_mark``), read
    from indexes without decoding a record: a live region polls it instead of
    rebuilding the page while the runtime commits elsewhere.

    ``position``: the newest log row filed under the Work (0: none; the log is pruned
    from the oldest, so a prune can only lower it); ``timers``: its live Timers (a
    Timer moved to it is filed under the Work it left, so only their count shows it
    arrived); ``events``, ``newest_event``, ``routed_events``, ``scoped_events``: the
    Events of its timeline (its own and those routed to it), the highest sequence among
    them, and how many have a route and a Scope (each set once: a count rises when one
    is set); ``active_waits``: its active Waits; ``children``: its first children in
    creation order (as many as asked for, and one more to tell there are more), each
    with the newest log row of its Work record.

    The promise, for a store whose every writer keeps the version log: if the Work,
    one of its attempts, Waits or Timers, an Event of its timeline or one of those
    children differs between two Views, their marks differ. Not the converse: a prune
    or a change the page does not show may change the mark too."""

    position: int
    timers: int
    events: int
    newest_event: int
    routed_events: int
    scoped_events: int
    active_waits: int
    children: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class WorksMark:
    """What changes whenever a page of Work changes, or anything of its Work's rows on
    a list (``Tx.works_mark``), read from indexes without decoding a record: ``ids``,
    the page's Work in its order; ``position``, the newest log row filed under any of
    them (0: none); ``timers``, their live Timers (a Timer moved to one of them is
    filed under the Work it left: only the count shows it arrived).

    The promise, for a store whose every writer keeps the version log: if the page
    (``query_works`` of the same query), or an attempt, Wait or Timer of one of its
    Work, differs between two Views, their marks differ."""

    ids: tuple[str, ...]
    position: int
    timers: int
