"""Transaction plumbing shared by every area of the rules.

``TxScope`` refuses nesting, ``check_admission`` enforces the Guard's cancel token and
deadline, and ``TxBase`` holds Guard.now, the open/thread checks (``_check``), the
read-only refusal (``_writable``), lease fencing (``verify_lease``) and the one
pre-commit rule (``before_commit``). Serializability comes from the backend's
transaction (a global lock in the double, ``BEGIN IMMEDIATE`` on SQLite), so a read
followed by a write inside one operation cannot race another transaction.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import replace

from ..errors import Cancelled, Fenced, Invalid, ReadOnly, TxClosed
from ..meaning import series_tally, tally, triage
from ..records import (
    Execution,
    ExecutionState,
    Guard,
    LeaseRef,
    Nanos,
    WaitState,
    Work,
    WorkQuery,
    WorkState,
)
from ..versions import VersionKind
from .rows import ContractRows

# Thread-local marker of an open transaction, to refuse nesting (checklist T-08).
_local = threading.local()

# The states of an attempt parked on a Wait (resolution 19: its Wait joins that write).
PARKED_STATES = frozenset({ExecutionState.PARKED, ExecutionState.WAITING})


def in_transaction() -> bool:
    return bool(getattr(_local, "depth", 0))


class TxScope:
    """Marks the current thread as inside a transaction for the ``with`` body."""

    def __enter__(self) -> None:
        if in_transaction():
            raise TxClosed("a transaction cannot be nested inside another transaction")
        _local.depth = 1

    def __exit__(self, *exc: object) -> None:
        _local.depth = 0


def check_admission(guard: Guard) -> None:
    """Raise Cancelled when the guard's token fired or its deadline passed."""
    if guard.cancel is not None and guard.cancel.cancelled:
        raise Cancelled("transaction cancelled before commit")
    if guard.deadline is not None and time.monotonic() >= guard.deadline:
        raise Cancelled("transaction deadline passed before commit")


class TxBase(ContractRows):
    """State of one transaction; the area rules build on it."""

    def __init__(self, now: Nanos, *, read_only: bool) -> None:
        self._now = now
        self._read_only = read_only
        self._open = True
        self._thread = threading.get_ident()
        self._registered_waits: list[str] = []
        # Attempts parked by this transaction: the only ones a Wait may join.
        self._parked_here: set[str] = set()
        # Work whose triage marks this commit settles: True when one of its attempts
        # changed (its error group may have), False for the Work or a Timer only.
        self._touched: dict[str, bool] = {}
        # What this transaction's Work writes change in the tally (``meaning.tally``),
        # not yet handed to the backend (``_settle_tally``).
        self._tally: Counter[tally.TallyKey] = Counter()
        # The same for the series tally (``meaning.series_tally``): Work writes,
        # Events accepted or given a Scope, first claims (``_settle_series``).
        self._series: Counter[series_tally.SeriesKey] = Counter()
        # Set by the first write call; commits of dirty transactions bump the store
        # version that lets the console answer "unchanged" without reading records.
        self.dirty = False
        # False when the Guard carries a lease: executor transactions may not use the
        # control-plane-only operations (revoke_lease).
        self.trusted = True
        # The version log (``tx.versions``): each changed record's state before this
        # transaction, by (kind, ID, KV key); the first Event accepted here and the
        # attempt whose lease this runs under stamp its rows. A store built without the
        # log (a benchmark's baseline) sets ``version_log`` False.
        self.version_log = True
        self._befores: dict[tuple[VersionKind, str, str], tuple[str | bytes | None, str]] = {}
        self._first_event = 0
        self._lease_execution = ""

    # -- transaction plumbing ------------------------------------------------------
    @property
    def now(self) -> Nanos:
        self._check()
        return self._now

    def admit(self, now: Nanos) -> None:
        """Fix Guard.now once the backend holds its write lock and knows the last
        committed now (backends that read the clock through the Tx itself)."""
        self._now = now

    @property
    def read_only(self) -> bool:
        return self._read_only

    def close(self) -> None:
        self._open = False

    def _check(self) -> None:
        if not self._open:
            raise TxClosed("transaction already ended; a Tx must not escape its callback")
        if threading.get_ident() != self._thread:
            raise TxClosed("a Tx must not be used from another thread")

    def _writable(self) -> None:
        self._check()
        if self._read_only:
            raise ReadOnly("this transaction is read-only (View)")
        self.dirty = True

    def verify_lease(self, lease: LeaseRef) -> Execution:
        """Fencing (L-07): the lease must be the attempt's live authority."""
        x = self._get("execution", lease.execution_id)
        if x is None:
            raise Fenced(f"lease names unknown Execution {lease.execution_id!r}")
        if x.state is not ExecutionState.RUNNING or not x.owner:
            raise Fenced(f"Execution {x.id} holds no live lease (state {x.state})")
        if x.owner != lease.owner or x.epoch != lease.epoch:
            raise Fenced(f"lease {lease.owner}@{lease.epoch} superseded by {x.owner}@{x.epoch}")
        if self._now >= x.lease_expires_at:
            raise Fenced(f"lease of Execution {x.id} expired")
        work = self._get("work", x.work_id)
        if work is None or work.terminal:
            raise Fenced(f"Work {x.work_id} is terminal")
        self._lease_execution = x.id
        return x

    def _write_work(self, previous: Work | None, stored: Work) -> None:
        """Every Work write of the rules: the record (``previous`` None: a new Work)
        and its change to the tally, which reaches the backend once per transaction
        (``_settle_tally``), however many times the Work was written."""
        self._put("work", stored, create=previous is None)
        tally.delta(previous, stored, self._tally)
        series_tally.work_delta(previous, stored, self._series)

    def _settle_tally(self) -> None:
        """Hand the pending tally changes to the backend: at commit, and before a
        read the tally answers, so a read inside the writing transaction sees its
        own writes counted."""
        changed = {key: n for key, n in self._tally.items() if n}
        self._tally.clear()
        if changed:
            self._add_tally(changed)

    def _settle_series(self) -> None:
        """Hand the pending series tally changes to the backend: at commit, and
        before a series read, so a read inside the writing transaction counts its own
        writes (rows that cancelled out are not sent)."""
        changed = {key: n for key, n in self._series.items() if n}
        self._series.clear()
        if changed:
            self._add_series_tally(changed)

    def _tally_count(self, query: WorkQuery) -> int | None:
        """``count_works`` from the tally, when it answers the query: by states, Scope
        and kind, exhausted or not (the tally counts exhausted Work per combination
        too); None otherwise. A sum of the Work (or exhausted) rows alone
        (``tally.total``), not the facets' every value."""
        keyed = replace(query, exhausted=False)
        if not tally.answers(keyed):
            return None
        self._settle_tally()
        return self._tally_total(keyed, query.exhausted)

    def _touch(self, work_id: str, attempt: bool = False) -> None:
        """Note a Work whose triage marks (``Work.exhausted``, ``error_group``) may
        have changed, to settle once at commit, whatever order the writes came in."""
        if work_id:
            self._touched[work_id] = attempt or self._touched.get(work_id, False)

    def _settle_triage(self) -> None:
        """Write the marks ``meaning.triage`` gives each touched Work, when they
        changed. Metadata kept by storage, like ``latest_executor``: no revision bump.
        A Work not ready costs one read; a ready one two more probes (its latest
        attempt, which is the only one that can be live, and its live Timers), and an
        attempt that ended waiting one more (its Work's Waits: a timed-out Wait groups
        it)."""
        for work_id, attempt in self._touched.items():
            work = self._get("work", work_id)
            if work is None:
                continue
            ready = work.state is WorkState.READY
            latest = self._latest_attempt(work_id) if attempt or ready else None
            group = work.error_group
            if attempt:
                # Only an attempt that ended waiting has a Wait that decides its group.
                waiting = latest is not None and latest.state is ExecutionState.WAITING
                waits = self._list("wait", work_id=work_id) if waiting else []
                group = triage.failure_key(latest, waits)
            exhausted = (
                ready
                and latest is not None
                and triage.is_exhausted(work, True, not latest.terminal, False)
                and not self._list("timer", work_id=work_id, live=True)
            )
            if (exhausted, group) != (work.exhausted, work.error_group):
                self._write_work(work, replace(work, exhausted=exhausted, error_group=group))
        self._touched.clear()

    def before_commit(self) -> None:
        """Waits must join the transaction that parks their attempt (resolution 19);
        the triage marks of every Work this transaction touched are settled, and then
        the tally changes of every Work write (the marks' included) are handed on,
        the series tally's with them."""
        self._settle_triage()
        self._settle_tally()
        self._settle_series()
        for wait_id in self._registered_waits:
            wait = self._get("wait", wait_id)
            if wait is None or wait.state is not WaitState.ACTIVE:
                continue
            x = self._get("execution", wait.execution_id)
            work = self._get("work", wait.work_id)
            parked = x is not None and x.state in PARKED_STATES and x.id in self._parked_here
            if not parked or work is None or work.state is not WorkState.WAITING:
                raise Invalid(
                    f"Wait {wait_id} must be registered in the transaction that parks "
                    "its attempt and marks its Work waiting"
                )
