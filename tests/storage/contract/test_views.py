"""Views (checklist §12, V): the only cases that call ``view``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import cast

import storage
from storage import LeaseRef, ReadOnly, StorageError, Store, Tx, Viewer
from storage.api import WRITES
from storage.run_records import DurableRunRecord

from ..support import (
    BLOCK_TIMEOUT,
    TTL,
    FakeClock,
    TransactOnlyStore,
    Worker,
    ids,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    payload,
    put_works,
    start_attempt,
    tx,
)
from ._helpers import inventory

# ---------------------------------------------------------------------------------
# 12. Views (V)
# ---------------------------------------------------------------------------------


def _view_fixture(store: Store) -> LeaseRef:
    """w1 with its attempt x1 running (the returned lease), w2 with a pending x2, an
    unrouted Event e1, Scope s1, a due Timer t1 and KV ns/k."""
    lease = start_attempt(store)

    def build(t: Tx) -> None:
        t.put_work(make_work("w2"))
        t.put_execution(make_execution("x2", "w2"))
        t.put_scope(make_scope("s1"))
        t.accept_event(make_event("e1"))
        t.put_timer(make_timer("t1", t.now))
        t.kv_put("ns", "k", b"v")

    tx(store, build)
    return lease


def _attempt_every_write(t: Tx, lease: LeaseRef) -> list[str]:
    """Try each write operation with arguments that would otherwise succeed; return
    those that did not raise ReadOnly."""
    timer_revision = t.timer("t1").revision
    attempts: dict[str, Callable[[], object]] = {
        "accept_event": lambda: t.accept_event(make_event("e-view")),
        "mark_routed": lambda: t.mark_routed("e1", "w1", "routed"),
        "set_event_scope": lambda: t.set_event_scope("e1", "s1"),
        "put_work": lambda: t.put_work(make_work("w-view")),
        "put_execution": lambda: t.put_execution(replace(t.execution("x1"), trace_id="v")),
        "claim": lambda: t.claim("x2", "runner-b", t.now + TTL),
        "renew": lambda: t.renew(lease, t.now + 2 * TTL),
        "release": lambda: t.release(lease),
        "set_execution_executor": lambda: t.set_execution_executor("x2", "shell"),
        "revoke_lease": lambda: t.revoke_lease("x1"),
        "put_scope": lambda: t.put_scope(make_scope("s-view")),
        "put_timer": lambda: t.put_timer(make_timer("t-view", t.now)),
        "delete_timer": lambda: t.delete_timer("t1", timer_revision),
        "fire_timer": lambda: t.fire_timer("t1", timer_revision),
        "put_wait": lambda: t.put_wait(make_wait("wt-view")),
        "kv_put": lambda: t.kv_put("ns", "k2", b"v"),
        "kv_delete": lambda: t.kv_delete("ns", "k"),
        "put_run_record": lambda: t.put_run_record(DurableRunRecord(run_id="r-view"), 0),
        "prune_versions": lambda: t.prune_versions(2**62),
    }
    assert sorted(attempts) == sorted(WRITES), "view: write list is incomplete"
    accepted = []
    for name, attempt in attempts.items():
        try:
            attempt()
        except ReadOnly:
            continue
        except StorageError as err:
            accepted.append(f"{name} raised {type(err).__name__}")
            continue
        accepted.append(f"{name} succeeded")
    return accepted


def test_view_reads_committed_state_alongside_writes(store: Store, clock: FakeClock) -> None:
    """Named case view_reads_committed_state_alongside_writes (V-01..V-05, V-07): a
    View started while a write is held open completes without seeing it; every write
    in a View is refused with ReadOnly and nothing is kept; two reads in one View
    straddling another thread's commit see the same snapshot."""
    assert isinstance(store, Viewer), "view: the store is not a Viewer"
    viewer = cast(Viewer, store)
    lease = _view_fixture(store)

    # 1. Alongside an open write (checked first: a serialising View fails here).
    held, release = threading.Event(), threading.Event()

    def hold(t: Tx) -> None:
        t.put_work(make_work("w-held"))
        t.accept_event(make_event("held"))
        held.set()
        if not release.wait(BLOCK_TIMEOUT * 4):
            raise RuntimeError("the held writer was never released")

    def seen(t: Tx) -> tuple[list[str], list[str]]:
        return ids(t.works()), ids(t.events())

    writer = Worker(lambda: tx(store, hold), name="held-writer")
    views: list[Worker] = []
    try:
        assert held.wait(BLOCK_TIMEOUT), "view: the held writer never started"
        reader = Worker(lambda: viewer.view(seen), name="viewer")
        helper = Worker(lambda: storage.view(store, None, seen), name="storage.view")
        views += [reader, helper]
        assert reader.join(), "View waited behind an open write transaction"
        assert helper.join(), "View waited behind an open write transaction (storage.view)"
        assert reader.error is None, f"view: a View beside an open write failed: {reader.error!r}"
        assert helper.error is None, f"view: storage.view beside a write failed: {helper.error!r}"
        expected = (["w1", "w2"], ["e1"])
        assert reader.result == expected, f"View saw an uncommitted write: {reader.result}"
        assert helper.result == expected, f"View saw an uncommitted write: {helper.result}"
    finally:
        release.set()
        writer.join()
        # A View that waited for the writer (a broken backend) goes on once it lets go:
        # wait for it here. Left running, it read while the test's teardown truncated
        # the tables, and on PostgreSQL its shared locks and TRUNCATE's exclusive ones,
        # taken in different table orders, deadlocked.
        for view_worker in views:
            view_worker.join()
    assert writer.error is None, f"view: the held writer failed: {writer.error!r}"

    # 2. Writes are refused and nothing the callback does is kept.
    before = inventory(store, "ns")
    refused = viewer.view(lambda t: _attempt_every_write(t, lease))
    assert refused == [], f"View accepted a write: {refused}"
    refused = storage.view(store, None, lambda t: _attempt_every_write(t, lease))
    assert refused == [], f"View accepted a write (storage.view): {refused}"
    assert inventory(store, "ns") == before, "View kept a write"

    # 3. One snapshot for the whole View, even across another thread's commit.
    def late_commit(t: Tx) -> None:
        t.put_work(make_work("w-late"))
        t.put_work(replace(t.work("w2"), context=payload()))
        t.accept_event(make_event("late"))

    def straddle(t: Tx) -> tuple[object, object, bool, BaseException | None]:
        def read() -> object:
            return ids(t.works()), t.work("w2"), t.latest_sequence(), ids(t.events())

        first = read()
        committer = Worker(lambda: tx(store, late_commit), name="committer")
        committed = committer.join()
        return first, read(), committed, committer.error

    first, second, committed, error = viewer.view(straddle)
    assert committed, "view: a commit waited behind an open View"
    assert error is None, f"view: the commit beside a View failed: {error!r}"
    assert second == first, "View saw a commit made after it began (no snapshot)"
    assert "w-late" in viewer.view(lambda t: ids(t.works())), "View missed committed state"


def test_read_only_wrapper(store: Store, clock: FakeClock) -> None:
    """V-02: storage.read_only(tx) refuses every write with ReadOnly and passes
    reads through."""
    lease = _view_fixture(store)
    before = inventory(store, "ns")

    def fn(t: Tx) -> tuple[bool, bool, list[str]]:
        ro = storage.read_only(t)
        return ro.read_only, ro.work("w1") == t.work("w1"), _attempt_every_write(ro, lease)

    flag, reads, refused = tx(store, fn)
    assert flag, "V-02: read_only(tx).read_only is False"
    assert reads, "V-02: read_only(tx) reads differ from the transaction's"
    assert refused == [], f"V-02: read_only(tx) accepted a write: {refused}"
    assert inventory(store, "ns") == before, "V-02: a read_only(tx) write was kept"


def test_views_run_concurrently(store: Store, clock: FakeClock) -> None:
    """V-03: two Views can be open at once."""
    assert isinstance(store, Viewer), "view: the store is not a Viewer"
    viewer = cast(Viewer, store)
    put_works(store, make_work("w1"))
    entered = {"a": threading.Event(), "b": threading.Event()}

    def open_view(me: str, other: str) -> Callable[[], object]:
        def body(t: Tx) -> bool:
            entered[me].set()
            return entered[other].wait(BLOCK_TIMEOUT) and t.work("w1").id == "w1"

        return lambda: viewer.view(body)

    workers = [Worker(open_view("a", "b"), "view-a"), Worker(open_view("b", "a"), "view-b")]
    assert all(w.join(BLOCK_TIMEOUT * 2) for w in workers), "V-03: a View never finished"
    assert [w.result for w in workers] == [True, True], (
        f"V-03: two Views could not be open at once: {[w.error or w.result for w in workers]}"
    )


def test_view_helper_without_viewer(store: Store, clock: FakeClock) -> None:
    """V-05: storage.view over a store without View runs a transaction whose writes
    are refused and nothing is kept."""
    lease = _view_fixture(store)
    plain = TransactOnlyStore(store)
    assert not isinstance(plain, Viewer), "view: the wrapper unexpectedly has a View"
    before = inventory(store, "ns")
    reads = storage.view(plain, None, lambda t: ids(t.works()))
    assert reads == ["w1", "w2"], f"V-05: storage.view read {reads}"
    refused = storage.view(plain, None, lambda t: _attempt_every_write(t, lease))
    assert refused == [], f"V-05: storage.view without a View accepted a write: {refused}"
    assert inventory(store, "ns") == before, "V-05: storage.view without a View kept a write"
