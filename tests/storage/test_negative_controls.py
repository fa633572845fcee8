"""Negative controls (checklist 23.3): deliberately broken backends run the REAL contract
tests, and each must fail with the expected diagnostic. The controls assert that
failure, so this module passes exactly when the suite can catch each kind of breakage.

The contract modules are imported as modules, never their ``test_`` functions by name:
a ``test_`` name in this module's namespace would be collected here a second time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import pytest
from django.db import connections

from storage import Guard, Nanos, StoredEvent, WorkMark
from storage.memory import MemoryStore, MemoryTx
from storage.orm import OrmStore
from storage.tx import TxScope

from .contract import test_checkpoints as checkpoints
from .contract import test_events as events
from .contract import test_versions as versions
from .contract import test_views as views
from .contract import test_work_mark as work_mark
from .support import FakeClock

T = TypeVar("T")


class DedupBrokenTx(MemoryTx):
    """Forgets every delivery identity: a retried delivery is stored again."""

    def _event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent | None:
        return None


class DedupBrokenStore(MemoryStore):
    tx_class = DedupBrokenTx


class PartialCommitStore(MemoryStore):
    """Publishes whatever the callback wrote before it raised."""

    def transact(self, guard: Guard, callback: Callable[[Any], T]) -> T:
        with TxScope(), self._lock:
            now = max(self._clock(), self._state.last_now)
            working = self._state.copy()
            tx = self.tx_class(working, now, read_only=False)
            try:
                return callback(tx)
            finally:
                tx.close()
                working.last_now = now
                self.commit(working)


class UnloggedDeleteTx(MemoryTx):
    """Deletes a KV entry without logging its value: the version log loses it."""

    def _kv_delete(self, namespace: str, key: str) -> None:
        self.state.kv.pop((namespace, key), None)


class UnloggedDeleteStore(MemoryStore):
    tx_class = UnloggedDeleteTx


class UncountedTimersTx(MemoryTx):
    """A Work's mark without its Timers' count: a Timer moved in goes unseen."""

    def _work_mark(self, work_id: str, children: int) -> WorkMark:
        return replace(super()._work_mark(work_id, children), timers=0)


class UncountedTimersStore(MemoryStore):
    tx_class = UncountedTimersTx


class SerialisingViewStore(MemoryStore):
    """A View that queues behind writers (takes the transaction lock)."""

    def view(self, callback: Callable[[Any], T], now: Nanos | None = None) -> T:
        with self._lock:
            return super().view(callback, now)


class WritingViewStore(MemoryStore):
    """A View that runs on a writable copy of the snapshot and keeps its writes."""

    def view(self, callback: Callable[[Any], T], now: Nanos | None = None) -> T:
        with TxScope():
            working = self._state.copy()
            tx = self.tx_class(working, now or self._clock(), read_only=False)
            try:
                return callback(tx)
            finally:
                tx.close()
                self.commit(working)


class DeferrableViewStore(OrmStore):
    """On PostgreSQL: a View that begins SERIALIZABLE READ ONLY DEFERRABLE, the setting
    checklist resolution 8 rules out: it waits for a snapshot no open serializable
    writer can disturb, i.e. until the open writers finish."""

    def _pin_snapshot(self) -> tuple[Nanos, int, int]:
        with connections[self.view_using].cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE")
        return super()._pin_snapshot()


class WriterAliasViewStore(OrmStore):
    """On SQLite: a View opened on the writer's connection, whose BEGIN IMMEDIATE
    waits for the write lock like any writer."""

    def __init__(self, clock: Callable[[], Nanos]) -> None:
        super().__init__(clock, using="default", view_using="default")


Contract = Callable[[Any, FakeClock], None]

DEDUPLICATION = events.test_delivery_identity_versus_correlation
ATOMICITY = checkpoints.test_atomic_route_effects
VIEW_ISOLATION = views.test_view_reads_committed_state_alongside_writes
VERSION_REPLAY = versions.test_replaying_the_log_to_any_version_is_what_a_fresh_store_reached
WORK_MARK = work_mark.test_a_different_page_always_has_a_different_mark

# The threads the View test starts (tests/storage/contract/test_views.py).
CONTRACT_THREADS = frozenset({"held-writer", "viewer", "storage.view", "committer"})


def run(contract: Contract, store: Any, clock: FakeClock) -> None:
    try:
        contract(store, clock)
    finally:
        # A test that fails must still leave no thread of its own reading or writing:
        # one still running during teardown's TRUNCATE deadlocked it on PostgreSQL.
        alive = sorted(t.name for t in threading.enumerate() if t.name in CONTRACT_THREADS)
        assert not alive, f"the test returned with its threads still running: {alive}"


@pytest.mark.parametrize(
    ("broken", "contract", "diagnostic"),
    [
        pytest.param(
            DedupBrokenStore,
            DEDUPLICATION,
            "a duplicate delivery reported added=True",
            id="broken-deduplication",
        ),
        pytest.param(
            PartialCommitStore,
            ATOMICITY,
            "a failed processing transaction left",
            id="partial-commit",
        ),
        pytest.param(
            SerialisingViewStore,
            VIEW_ISOLATION,
            "View waited behind an open write transaction",
            id="view-serialises-behind-writes",
        ),
        pytest.param(
            WritingViewStore,
            VIEW_ISOLATION,
            "View accepted a write",
            id="view-writes",
        ),
        pytest.param(
            UnloggedDeleteStore,
            VERSION_REPLAY,
            "as of",
            id="version-log-loses-a-delete",
        ),
        pytest.param(
            UncountedTimersStore,
            WORK_MARK,
            "another Work's Timer moved to it",
            id="work-mark-misses-a-timer-moved-in",
        ),
    ],
)
def test_the_contract_catches_a_broken_double(
    broken: type[MemoryStore], contract: Contract, diagnostic: str
) -> None:
    clock = FakeClock()
    with pytest.raises(AssertionError, match=diagnostic):
        run(contract, broken(clock=clock), clock)


@pytest.mark.parametrize(
    "contract",
    [DEDUPLICATION, ATOMICITY, VIEW_ISOLATION, VERSION_REPLAY, WORK_MARK],
    ids=["deduplication", "atomicity", "view-isolation", "version-replay", "work-mark"],
)
def test_the_same_contract_tests_pass_on_the_reference_double(contract: Contract) -> None:
    """The controls above fail because of the breakage, not because the test is flaky."""
    clock = FakeClock()
    run(contract, MemoryStore(clock=clock), clock)


@pytest.mark.sqlite_only
@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_view_contract_catches_a_sqlite_view_on_the_writer_connection() -> None:
    clock = FakeClock()
    with pytest.raises(AssertionError, match="View waited behind an open write transaction"):
        run(VIEW_ISOLATION, WriterAliasViewStore(clock), clock)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_view_contract_catches_a_serializable_deferrable_postgresql_view() -> None:
    clock = FakeClock()
    with pytest.raises(AssertionError, match="View waited behind an open write transaction"):
        run(VIEW_ISOLATION, DeferrableViewStore(clock), clock)
