"""Correlation keys (checklist §2, CK)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from storage import Conflict, CorrelationKey, Invalid, NotFound, Store, Tx, Work

from ..support import (
    BLOCK_TIMEOUT,
    FakeClock,
    Worker,
    fails,
    get_work,
    ids,
    key,
    make_scope,
    make_work,
    put_works,
    tx,
    update_work,
)
from ._helpers import CANCELLED, COMPLETED, FAILED, RUNNING

# ---------------------------------------------------------------------------------
# 2. Correlation keys (CK)
# ---------------------------------------------------------------------------------


def test_key_parts_nonempty(store: Store, clock: FakeClock) -> None:
    """CK-01: a key with an empty source or external ID is Invalid, on create and on
    attach."""
    fails(
        store,
        Invalid,
        lambda t: t.put_work(make_work("w1", keys=[CorrelationKey("", "1")])),
        "CK-01 empty key source",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(make_work("w1", keys=[CorrelationKey("github.acme", "")])),
        "CK-01 empty external ID",
    )
    (w,) = put_works(store, make_work("w1", keys=[key("1")]))
    fails(
        store,
        Invalid,
        lambda t: t.put_work(replace(w, keys=(key("1"), CorrelationKey("", "2")))),
        "CK-01 attach of an empty key",
    )
    assert get_work(store, "w1").keys == (key("1"),), "CK-01: an empty key was attached"


def test_key_lookup(store: Store, clock: FakeClock) -> None:
    """CK-02, EV-07: lookup by each key returns the owning Work, also once it is
    terminal; an unowned key is NotFound."""
    k1, k2 = key("1"), key("2", source="gitlab.corp")
    put_works(store, make_work("w1", keys=[k1, k2]), make_work("w2"))

    def owners(t: Tx) -> list[str]:
        return [t.work_by_key(k1).id, t.work_by_key(k2).id]

    assert tx(store, owners) == ["w1", "w1"], "CK-02: key lookup did not return the owner"
    fails(store, NotFound, lambda t: t.work_by_key(key("3")), "CK-02 lookup of an unowned key")
    update_work(store, "w1", state=FAILED)
    assert tx(store, owners) == ["w1", "w1"], "CK-02: a terminal Work lost its keys"


def test_key_owned_elsewhere_conflicts(store: Store, clock: FakeClock) -> None:
    """CK-03: creating or attaching a key owned by another Work conflicts, whatever
    that Work's scope or state."""
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2"))])
    k_live, k_dead = key("live"), key("dead")
    put_works(
        store,
        make_work("owner", scope_id="s1", keys=[k_live]),
        make_work("gone", keys=[k_dead]),
        make_work("w3", scope_id="s2"),
    )
    update_work(store, "gone", state=CANCELLED)
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w4", scope_id="s2", keys=[k_live])),
        "CK-03 create with a key owned in another scope",
    )
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w4", keys=[k_dead])),
        "CK-03 create with a key owned by a terminal Work",
    )
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(t.work("w3"), keys=(k_live,))),
        "CK-03 attach of a key owned elsewhere",
    )
    assert get_work(store, "w3").keys == (), "CK-03: a foreign key was attached"


def test_key_conflict_is_atomic(store: Store, clock: FakeClock) -> None:
    """CK-04: a create or attach naming one free and one owned key stores neither the
    Work nor the free key."""
    k_free, k_owned, k3 = key("free"), key("owned"), key("k3")
    put_works(store, make_work("owner", keys=[k_owned]), make_work("w3"))
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w2", keys=[k_free, k_owned])),
        "CK-04 create with a free and an owned key",
    )
    before = get_work(store, "w3")
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(t.work("w3"), keys=(k3, k_owned))),
        "CK-04 attach of a free and an owned key",
    )

    def state(t: Tx) -> tuple[list[str], Work]:
        unowned = []
        for k in (k_free, k3):
            try:
                t.work_by_key(k)
            except NotFound:
                unowned.append(k.external_id)
        return unowned, t.work("w3")

    unowned, after = tx(store, state)
    assert unowned == ["free", "k3"], "CK-04: a conflicting write still claimed its free key"
    assert after == before, "CK-04: a conflicting attach changed the Work"
    assert "w2" not in ids(tx(store, lambda t: t.works())), (
        "CK-04: a Work whose key conflicted was created"
    )


def test_key_append_keeps_order(store: Store, clock: FakeClock) -> None:
    """CK-05, Q-02: appended keys keep attach order, the first key (and the source it
    defines) is stable, and re-listing owned keys is a no-op."""
    k1, k2, k3 = key("1", source="gitlab.corp"), key("2"), key("3", source="jira.acme")
    (w,) = put_works(store, make_work("w1", keys=[k1]))
    w = tx(store, lambda t: t.put_work(replace(w, keys=(k1, k2))))
    w = tx(store, lambda t: t.put_work(replace(w, keys=(k1, k2, k3))))
    assert w.keys == (k1, k2, k3), f"CK-05: keys lost their attach order: {w.keys}"
    again = tx(store, lambda t: t.put_work(replace(t.work("w1"), keys=(k1, k2, k3))))
    assert again.keys == (k1, k2, k3), "CK-05: re-listing owned keys changed them"
    stored = get_work(store, "w1")
    assert stored.source == "gitlab.corp", f"CK-05: the first key changed: {stored.keys}"
    assert tx(store, lambda t: t.work_by_key(k3).id) == "w1", "CK-05: an appended key is unowned"


def test_keys_cannot_be_removed(store: Store, clock: FakeClock) -> None:
    """CK-06: an update that omits or reorders existing keys is Invalid."""
    k1, k2 = key("1"), key("2")
    (w,) = put_works(store, make_work("w1", keys=[k1, k2]))
    for what, keys in [("omit", (k1,)), ("reorder", (k2, k1)), ("clear", ())]:
        fails(
            store,
            Invalid,
            lambda t, ks=keys: t.put_work(replace(w, keys=ks)),
            f"CK-06 {what} keys",
        )
    assert get_work(store, "w1") == w, "CK-06: a key was removed or reordered"


def test_keys_never_transfer(store: Store, clock: FakeClock) -> None:
    """CK-07, ID-13: a key never moves to another Work, even from terminal Work, and
    nothing can be attached to terminal Work."""
    k = key("1")
    put_works(store, make_work("a", keys=[k]), make_work("b"))
    update_work(store, "a", state=RUNNING)
    update_work(store, "a", state=COMPLETED)
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(t.work("b"), keys=(k,))),
        "CK-07 transfer of a terminal Work's key",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(replace(t.work("a"), keys=(k, key("2")))),
        "CK-07 attach to a terminal Work",
    )
    assert tx(store, lambda t: t.work_by_key(k).id) == "a", "CK-07: a key was transferred"
    fails(store, NotFound, lambda t: t.work_by_key(key("2")), "CK-07 key attached to terminal")


def test_concurrent_key_ownership(store: Store, clock: FakeClock) -> None:
    """Scenario "concurrent key ownership" (CK-08, T-06): two concurrent transactions
    creating different Works with the same key: exactly one commits, the other gets
    Conflict."""
    k = key("contested")
    barrier = threading.Barrier(2, timeout=BLOCK_TIMEOUT)

    def create(work_id: str) -> Callable[[], object]:
        def run() -> object:
            barrier.wait()
            return tx(store, lambda t: t.put_work(make_work(work_id, keys=[k])))

        return run

    workers = {name: Worker(create(name), name=name) for name in ("wa", "wb")}
    for name, worker in workers.items():
        assert worker.join(), f"concurrent key ownership: {name} never finished"
    winners = [name for name, w in workers.items() if w.error is None]
    errors = [type(w.error).__name__ for w in workers.values() if w.error is not None]
    assert len(winners) == 1, (
        f"concurrent key ownership: {len(winners)} transactions committed the same key"
    )
    assert errors == ["Conflict"], f"concurrent key ownership: the loser got {errors}"
    owner = tx(store, lambda t: t.work_by_key(k).id)
    assert owner == winners[0], "concurrent key ownership: the key is owned by the loser"
    assert ids(tx(store, lambda t: t.works())) == winners, (
        "concurrent key ownership: the losing Work was stored"
    )
