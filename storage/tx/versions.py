"""The record-version log's rules (``storage.versions``): what a writing transaction
appends, and the reads of the past.

A backend notes each record's state before this transaction's first write of it
(``_note_before``, from its ``_put``, ``_delete_timer``, ``_kv_put`` and
``_kv_delete``, where it holds that state anyway), and ``transact`` hands the notes
on once, stamped with the transaction's store version, before the commit
(``log_versions``). A record written several times in one transaction gets one row:
its state before the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from .. import codec
from ..errors import Fenced, Invalid
from ..meaning.query import check_query
from ..records import Nanos, WorkQuery
from ..tables import RECORD_CLASSES
from ..versions import (
    PRUNE_BATCH,
    VERSION_KINDS,
    KvAsOf,
    RecordAt,
    RecordVersion,
    VersionKind,
    WorkAsOf,
    WorkMark,
    WorksMark,
)
from . import fields
from .base import TxBase
from .kv import key_listing

# A version's rows are numbered within it: position = version << SHIFT | index, so
# the log's order is (version, index) and a version range is a position range.
SHIFT = 24
PER_VERSION = 1 << SHIFT
# The largest version a position can hold within a signed 64-bit integer.
VERSION_MAX = (1 << (63 - SHIFT)) - 1
VERSION_END = (1 << 63) - 1  # past every position
# The largest cursor a read takes: a position (versions past VERSION_MAX's first rows
# have positions past VERSION_MAX), less one, so the next position still fits 64 bits.
START_MAX = VERSION_END - 1
NANOS_MAX = (1 << 63) - 1
LATER_MAX = 1000  # records one later_versions call looks up
MARKED_CHILDREN_MAX = 1000  # children one work_mark covers
MARKED_WORKS_MAX = 500  # the largest page one works_mark covers


def version_of(position: int) -> int:
    return position >> SHIFT


def first_position(version: int) -> int:
    """The position of a version's first row (a bound for "above version - 1")."""
    return min(version, VERSION_MAX) << SHIFT


def decoded(kind: VersionKind, before: str | bytes | None) -> object:
    """A stored row's ``before`` as the contract returns it: the record decoded from
    its text, a KV entry's bytes, or None (the change created it)."""
    if before is None:
        return None
    if kind == "kv":
        return bytes(cast(bytes, before))  # PostgreSQL's bytea comes as a memoryview
    return codec.decode(RECORD_CLASSES[kind], str(before))


def _bounded(value: int, what: str, most: int = VERSION_MAX) -> int:
    """``value`` checked as a nonnegative integer and capped at ``most`` (a version,
    a count; a position's cap is ``START_MAX``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"{what} is an integer, not {type(value).__name__}")
    if value < 0:
        raise Invalid(f"{what} is nonnegative")
    return min(value, most)


class VersionRules(TxBase):
    """The log's writes (``log_versions``, ``prune_versions``) and reads."""

    def _note_before(
        self, kind: VersionKind, id: str, key: str, before: str | bytes | None, work_id: str = ""
    ) -> None:
        """Remember a record's state before this transaction's first write of it:
        its stored text (a KV entry: its bytes), None when it did not exist; and the
        Work it is of (``RecordVersion.work_id``: before the write, or after it when
        the write creates it)."""
        if self.version_log:
            self._befores.setdefault((kind, id, key), (before, work_id))

    def log_versions(self, version: int) -> None:
        """Append this transaction's rows, as version ``version`` (``transact``'s
        store version after this commit), with the buffered writes."""
        if not self._befores:
            return
        if version > VERSION_MAX:
            raise Invalid(f"store version {version} is past the version log's {VERSION_MAX}")
        if len(self._befores) >= PER_VERSION:
            raise Invalid(f"a transaction may change at most {PER_VERSION - 1} records")
        base = version << SHIFT
        rows = [
            (base + i, kind, id, key, before, work_id)
            for i, ((kind, id, key), (before, work_id)) in enumerate(sorted(self._befores.items()))
        ]
        self._befores = {}
        self._append_versions(rows, self._now, self._first_event, self._lease_execution)

    # -- reads -------------------------------------------------------------------------
    def version_horizon(self) -> int:
        """The oldest version the log can reconstruct: every change after it is logged
        (0 for a store that had the log from its start)."""
        self._check()
        return self._version_horizon()

    def record_versions(
        self,
        kind: VersionKind,
        id: str,
        key: str = "",
        *,
        after: int = 0,
        upto: int = 0,
        limit: int = 0,
        newest_first: bool = False,
    ) -> list[RecordVersion]:
        """One record's rows with ``after`` < version <= ``upto`` (0: unbounded), in
        version order or newest first, at most ``limit`` (0: all). ``key`` is a KV
        entry's key (its namespace is ``id``) and "" for the other kinds."""
        self._check()
        self._version_kind(kind, id, key)
        after, upto = _bounded(after, "after"), _bounded(upto, "upto")
        limit = _bounded(limit, "limit")
        return self._record_versions(kind, id, key, after, upto, limit, newest_first)

    def version_changes(
        self, *, after: int = 0, upto: int = 0, start: int = 0, limit: int = 0
    ) -> list[RecordVersion]:
        """Every record's rows with ``after`` < version <= ``upto`` (0: unbounded) and
        position > ``start``, in the log's order, at most ``limit`` (0: all): what
        changed between two moments, a page at a time."""
        self._check()
        after, upto = _bounded(after, "after"), _bounded(upto, "upto")
        start, limit = _bounded(start, "start", START_MAX), _bounded(limit, "limit")
        low = max(first_position(after + 1), start + 1)
        high = first_position(upto + 1) if upto else None
        return self._version_changes(low, high, limit)

    def record_as_of(self, kind: VersionKind, id: str, version: int, key: str = "") -> RecordAt:
        """The record (a KV entry's value) as it was once version ``version`` had
        committed: the state before its first later change, else its current one."""
        self._check()
        self._version_kind(kind, id, key)
        version = _bounded(version, "version")
        if version < self._version_horizon():
            return RecordAt(None, known=False)
        later = self._record_versions(kind, id, key, version, 0, 1, False)
        if later:
            return RecordAt(later[0].before)
        if kind == "kv":
            return RecordAt(self._kv_get(id, key))
        return RecordAt(self._get(kind, id))

    def kv_list_as_of(
        self, namespace: str, version: int, prefix: str = "", after: str = "", limit: int = 0
    ) -> KvAsOf:
        """``kv_list`` as it was once ``version`` had committed: the entries of
        ``namespace`` then, keys starting with ``prefix``, by key in binary order,
        after ``after``, at most ``limit`` (0: all). An entry then is a key no later
        transaction changed, with its value now, or one a later transaction changed
        (deleted included), with its state before its first later change, when that
        was a value. Queries per batch: the keys now and the changed keys' first rows
        after the version, each one read of an index; one batch unless keys created
        after the version fill it."""
        self._check()
        limit = key_listing(namespace, prefix, after, limit)
        version = _bounded(version, "version")
        if version < self._version_horizon():
            return KvAsOf([], known=False)
        low = first_position(version + 1)
        out: list[tuple[str, bytes]] = []
        while True:
            now = dict(self._kv_list(namespace, prefix, after, limit))
            firsts = self._kv_first_versions(namespace, low, prefix, after, limit)
            changed = {r.key: r.before for r in firsts}
            # A full batch may go on past its last key: the two are merged whole up to
            # the lower of the full ones' last keys, and read again after it.
            full = [max(keys) for keys in (now, changed) if limit and len(keys) == limit]
            bound = min(full) if full else None
            for key in sorted(now.keys() | changed.keys()):
                if bound is not None and key > bound:
                    break
                value = changed[key] if key in changed else now[key]
                if value is not None:
                    out.append((key, value))
                    if len(out) == limit:
                        return KvAsOf(out)
            if bound is None:
                return KvAsOf(out)
            after = bound

    def work_versions(
        self, work_id: str, *, after: int = 0, upto: int = 0, start: int = 0, limit: int = 0
    ) -> list[RecordVersion]:
        """The rows of a Work's records (the Work, its attempts, Waits and Timers)
        with ``after`` < version <= ``upto`` (0: unbounded) and position > ``start``,
        in the log's order, at most ``limit``: what changed in it between two moments."""
        self._check()
        fields.require_id(work_id, "Work ID")
        after, upto = _bounded(after, "after"), _bounded(upto, "upto")
        start, limit = _bounded(start, "start", START_MAX), _bounded(limit, "limit")
        low = max(first_position(after + 1), start + 1)
        high = first_position(upto + 1) if upto else None
        return self._work_versions(work_id, low, high, limit)

    def work_as_of(self, work_id: str, version: int) -> WorkAsOf:
        """A Work with its attempts, Waits and Timers as they were once ``version``
        had committed. Exact: each record's state is the one before its first change
        after the version (``_first_versions``), else its current one; a Timer that
        was the Work's then and is gone or moved away now is found by its row, and
        every Timer is checked against its own rows (it may have moved). Queries: the
        horizon, the Work's rows after the version, the Work when it has none, its
        three current lists, and its Timers' rows."""
        self._check()
        fields.require_id(work_id, "Work ID")
        version = _bounded(version, "version")
        if version < self._version_horizon():
            return WorkAsOf(None, [], [], [], known=False)
        low = first_position(version + 1)
        first: dict[tuple[str, str], RecordVersion] = {
            (r.kind, r.id): r for r in self._first_versions(low, work_id=work_id)
        }
        changed = first.get(("work", work_id))
        work = changed.before if changed is not None else self._get("work", work_id)
        if work is None:
            return WorkAsOf(None, [], [], [])
        current: dict[tuple[str, str], Any] = {}
        for kind in ("execution", "wait", "timer"):
            for record in self._list(kind, work_id=work_id):
                current[(kind, record.id)] = record
        # A Timer can move between Work, and each move is filed under the Work it
        # left: a Timer's first row under this Work may follow an earlier one under
        # another (it moved here, then changed), so every Timer this Work has now or
        # had since is looked up by its own rows.
        timers = sorted({id for kind, id in [*current, *first] if kind == "timer"})
        for key in [k for k in first if k[0] == "timer"]:
            del first[key]
        if timers:
            for row in self._first_versions(kind="timer", seeks=[(id, low) for id in timers]):
                first[("timer", row.id)] = row
        then: dict[str, list[Any]] = {"execution": [], "wait": [], "timer": []}
        for key in sorted(set(current) | {k for k in first if k[0] != "work"}):
            record = first[key].before if key in first else current[key]
            if record is not None and record.work_id == work_id:
                then[key[0]].append(record)
        return WorkAsOf(
            work,
            sorted(then["execution"], key=lambda x: x.attempt),
            then["wait"],
            then["timer"],
        )

    def later_versions(
        self, kind: VersionKind, wanted: Sequence[tuple[str, int]]
    ) -> dict[str, RecordVersion]:
        """For each (record ID, version) of ``wanted``, the record's first row after
        that version, by ID (absent: it has not changed since, so it is as it is
        now). A seek of the per-record index each, a few hundred to a statement."""
        self._check()
        if kind == "kv":
            raise Invalid("later_versions reads records; a KV entry has record_versions")
        self._version_kind(kind, "-", "")
        if len(wanted) > LATER_MAX:
            raise Invalid(f"later_versions takes at most {LATER_MAX} records")
        seeks = []
        for id, version in wanted:
            fields.require_id(id, "record ID")
            seeks.append((id, first_position(_bounded(version, "version") + 1)))
        return {r.id: r for r in self._first_versions(kind=kind, seeks=seeks)}

    def work_mark(self, work_id: str, children: int = 0) -> WorkMark:
        """What changes whenever anything of the Work's page changes
        (``storage.versions.WorkMark``): the newest log row filed under it, counts of
        its live Timers, timeline Events (routed, scoped) and active Waits, and its
        first ``children`` children (0 to ``MARKED_CHILDREN_MAX``) with the newest row
        of each one's Work record. Reads indexes only: the per-Work log index's last entry, the
        Work's Events, Timers and Waits (a handful of rows for most Work), the
        children's index range and one seek of the per-record log index each."""
        self._check()
        fields.require_id(work_id, "Work ID")
        if isinstance(children, bool) or not isinstance(children, int):
            raise Invalid(f"children is an integer, not {type(children).__name__}")
        if not 0 <= children <= MARKED_CHILDREN_MAX:
            raise Invalid(f"work_mark covers 0 to {MARKED_CHILDREN_MAX} children")
        return self._work_mark(work_id, children)

    def works_mark(self, query: WorkQuery) -> WorksMark:
        """What changes whenever ``query``'s page changes, or an attempt, Wait or
        Timer of one of its Work (``storage.versions.WorksMark``): the page's IDs
        (the query's own index range, IDs only), the newest log row filed under
        them (one seek of the per-Work index each) and their live Timers (the
        per-Work index of live Timers). ``query.limit`` is 1 to ``MARKED_WORKS_MAX``:
        the read follows the page, never the store."""
        self._check()
        check_query(query)
        if not 1 <= query.limit <= MARKED_WORKS_MAX:
            raise Invalid(f"works_mark reads a page of 1 to {MARKED_WORKS_MAX} Work")
        return self._works_mark(query)

    def version_at(self, at: Nanos) -> int:
        """The store version as of time ``at``: the last version committed at or before
        it (the current version when nothing in the log is later)."""
        self._check()
        if isinstance(at, bool) or not isinstance(at, int):
            raise Invalid("version_at takes integer nanoseconds")
        later = self._first_position_after(max(0, min(at, NANOS_MAX)))
        if later is None:
            return self._store_version()
        return version_of(later) - 1

    # -- pruning -----------------------------------------------------------------------
    def prune_versions(self, before: Nanos, limit: int = PRUNE_BATCH) -> int:
        """Delete the oldest rows committed before ``before``, at most ``limit`` (1 to
        ``PRUNE_BATCH``), and raise the horizon past them; returns how many went. A
        control-plane write: call it until it returns 0."""
        self._writable()
        if not self.trusted:
            raise Fenced("prune_versions needs control-plane authority (no lease in the Guard)")
        if isinstance(before, bool) or not isinstance(before, int):
            raise Invalid("prune_versions takes integer nanoseconds")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= PRUNE_BATCH:
            raise Invalid(f"prune_versions limit is 1 to {PRUNE_BATCH}")
        last = self._prune_versions(before, limit)
        if last is None:
            return 0
        deleted, position = last
        self._set_version_horizon(max(self._version_horizon(), version_of(position)))
        return deleted

    @staticmethod
    def _version_kind(kind: str, id: str, key: str) -> None:
        if kind not in VERSION_KINDS:
            raise Invalid(f"no version log kind {kind!r}; one of {', '.join(VERSION_KINDS)}")
        fields.require_id(id, "KV namespace" if kind == "kv" else "record ID")
        if kind == "kv":
            fields.require_id(key, "KV key", fields.KV_KEY_MAX_BYTES)
        elif key:
            raise Invalid("only a KV entry's version has a key")
