"""Namespaced KV (checklist §19, KV)."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from storage import KV_VALUE_LIMIT, Fenced, Invalid, NotFound, Store, Tx

from ..support import Crash, FakeClock, crashes, fails, ids, make_event, start_attempt, tx

# ---------------------------------------------------------------------------------
# 19. Namespaced KV (KV)
# ---------------------------------------------------------------------------------


def test_kv_basics(store: Store, clock: FakeClock) -> None:
    """KV-01, KV-02 (resolution): get/put/delete scoped by namespace; empty
    namespace or key is Invalid; get of an absent key is NotFound; delete of an
    absent key is fine."""
    tx(store, lambda t: [t.kv_put("ns", "k", b"one"), t.kv_put("other", "k", b"two")])
    got = tx(store, lambda t: (t.kv_get("ns", "k"), t.kv_get("other", "k")))
    assert got == (b"one", b"two"), f"KV-01: namespaces are not separate: {got}"
    tx(store, lambda t: t.kv_put("ns", "k", b"three"))
    assert tx(store, lambda t: t.kv_get("ns", "k")) == b"three", "KV-01: put did not overwrite"
    tx(store, lambda t: t.kv_delete("ns", "k"))
    fails(store, NotFound, lambda t: t.kv_get("ns", "k"), "KV-02 get after delete")
    tx(store, lambda t: t.kv_delete("ns", "k"))
    tx(store, lambda t: t.kv_delete("never", "there"))
    for what, op in [
        ("put empty namespace", lambda t: t.kv_put("", "k", b"v")),
        ("put empty key", lambda t: t.kv_put("ns", "", b"v")),
        ("get empty namespace", lambda t: t.kv_get("", "k")),
        ("get empty key", lambda t: t.kv_get("ns", "")),
        ("delete empty key", lambda t: t.kv_delete("ns", "")),
        ("list empty namespace", lambda t: t.kv_list("")),
    ]:
        fails(store, Invalid, op, f"KV-01 {what}")
    assert tx(store, lambda t: t.kv_get("other", "k")) == b"two", "KV-01: other namespace lost"


def test_kv_list_prefix(store: Store, clock: FakeClock) -> None:
    """KV-03: list by prefix returns only that namespace's keys with the prefix,
    sorted by key."""

    def fill(t: Tx) -> None:
        for k in ("cursor/b", "obs/2", "cursor/a", "obs/10", "cursor", "cursorx"):
            t.kv_put("recon", k, k.encode())
        t.kv_put("recon-other", "cursor/c", b"x")

    tx(store, fill)
    lists = tx(store, lambda t: (t.kv_list("recon", "cursor/"), t.kv_list("recon")))
    assert lists[0] == [("cursor/a", b"cursor/a"), ("cursor/b", b"cursor/b")], (
        f"KV-03: prefix listing returned {lists[0]}"
    )
    assert [k for k, _ in lists[1]] == [
        "cursor",
        "cursor/a",
        "cursor/b",
        "cursorx",
        "obs/10",
        "obs/2",
    ], f"KV-03: full listing is not sorted by key: {lists[1]}"
    assert tx(store, lambda t: t.kv_list("empty-ns")) == [], "KV-03: unknown namespace not empty"


def test_kv_joins_transaction(store: Store, clock: FakeClock) -> None:
    """KV-05, L-08: KV writes roll back with their transaction, and executor KV
    writes are fenced by the lease."""
    tx(store, lambda t: t.kv_put("ns", "k", b"v1"))

    def write_then_fail(t: Tx) -> None:
        t.kv_put("ns", "k", b"v2")
        t.kv_put("ns", "k2", b"new")
        t.kv_delete("ns", "k")
        raise Crash("failure after KV writes")

    crashes(store, write_then_fail, "KV-05 failure after KV writes")
    assert tx(store, lambda t: t.kv_list("ns")) == [("k", b"v1")], (
        "KV-05: KV writes not rolled back"
    )
    lease = start_attempt(store)
    tx(store, lambda t: t.kv_put("exec/x1", "state", b"a"), lease=lease)
    stale = replace(lease, epoch=lease.epoch + 1)
    fails(store, Fenced, lambda t: t.kv_put("exec/x1", "state", b"b"), "KV-05 fenced", lease=stale)
    assert tx(store, lambda t: t.kv_get("exec/x1", "state")) == b"a", "KV-05: fenced KV write kept"


def test_kv_checkpoints(store: Store, clock: FakeClock) -> None:
    """Scenario "KV checkpoints" (KV-06, CP-01): reconciliation stores observation
    and cursor keys with the resulting Events in one transaction; a cursor never
    advances without its Events."""
    tx(store, lambda t: t.kv_put("recon/github.acme", "cursor", b"page-1"))

    def reconcile(t: Tx, crash: bool) -> None:
        for n in (1, 2):
            t.accept_event(make_event(f"obs-{n}", source="github.poll", type="github.issue.seen"))
            t.kv_put("recon/github.acme", f"observed/{n}", b'{"state": "open"}')
        t.kv_put("recon/github.acme", "cursor", b"page-2")
        if crash:
            raise Crash("crash before commit")

    crashes(store, lambda t: reconcile(t, True), "KV checkpoints: crashed reconciliation")

    def state(t: Tx) -> tuple[bytes, list[str], list[str]]:
        return (
            t.kv_get("recon/github.acme", "cursor"),
            [k for k, _ in t.kv_list("recon/github.acme", "observed/")],
            ids(t.events()),
        )

    assert tx(store, state) == (b"page-1", [], []), (
        "KV checkpoints: a failed reconciliation advanced the cursor or kept observations"
    )
    tx(store, lambda t: reconcile(t, False))
    assert tx(store, state) == (b"page-2", ["observed/1", "observed/2"], ["obs-1", "obs-2"]), (
        "KV checkpoints: cursor, observations and Events did not commit together"
    )


def test_kv_value_limit(store: Store, clock: FakeClock) -> None:
    """KV-07, KV-04 (resolution 25): values must be bytes of at most
    KV_VALUE_LIMIT; larger values are Invalid."""
    tx(store, lambda t: t.kv_put("ns", "max", b"x" * KV_VALUE_LIMIT))
    fails(
        store,
        Invalid,
        lambda t: t.kv_put("ns", "big", b"x" * (KV_VALUE_LIMIT + 1)),
        "KV-07 value over the limit",
    )
    fails(
        store,
        Invalid,
        lambda t: t.kv_put("ns", "str", cast(bytes, "text")),
        "KV-07 value that is not bytes",
    )
    assert [k for k, _ in tx(store, lambda t: t.kv_list("ns"))] == ["max"], "KV-07: stored"
    assert len(tx(store, lambda t: t.kv_get("ns", "max"))) == KV_VALUE_LIMIT, "KV-07: truncated"


# ---------------------------------------------------------------------------------
# Listing namespaces and paging keys (issue 32: the console's KV inspector)
# ---------------------------------------------------------------------------------

# Names whose binary order differs from a linguistic one (case, punctuation, accents,
# digits), as tests/storage/orm/test_postgres.py orders IDs.
TRICKY = ["B", "a", "a-b", "ab", "a_b", "A", "Z", "z", "é", "e", "a b", "a.b", "10", "9", "a/b"]


def test_kv_namespaces_are_the_distinct_namespaces_in_binary_order(
    store: Store, clock: FakeClock
) -> None:
    """Each namespace holding a key once, whatever its number of keys, in code point
    (UTF-8 byte) order; a namespace whose last key is deleted is gone."""

    def keys(n: int) -> list[str]:
        return [f"k{k}" for k in range(n % 3 + 1)]

    tx(store, lambda t: [t.kv_put(ns, k, b"v") for n, ns in enumerate(TRICKY) for k in keys(n)])
    assert tx(store, lambda t: t.kv_namespaces()) == sorted(TRICKY)
    gone = {"é": keys(TRICKY.index("é")), "a": keys(TRICKY.index("a"))}
    tx(store, lambda t: t.kv_delete("a", "k0"))  # one key of two: still listed
    assert "a" in tx(store, lambda t: t.kv_namespaces())
    tx(store, lambda t: [t.kv_delete(ns, k) for ns, ks in gone.items() for k in ks])
    assert tx(store, lambda t: t.kv_namespaces()) == sorted(set(TRICKY) - {"é", "a"})
    assert tx(store, lambda t: t.kv_delete("never", "k")) is None
    assert "never" not in tx(store, lambda t: t.kv_namespaces())


def test_kv_namespaces_page_by_keyset(store: Store, clock: FakeClock) -> None:
    """``after`` is exclusive and need not be a namespace; ``limit`` bounds the page;
    pages walked one after another list every namespace once."""
    tx(store, lambda t: [t.kv_put(ns, "k", b"v") for ns in TRICKY])
    ordered = sorted(TRICKY)
    pages, after = [], ""
    while page := tx(store, lambda t, a=after: t.kv_namespaces(after=a, limit=4)):
        pages.append(page)
        after = page[-1]
    assert [len(p) for p in pages] == [4, 4, 4, 3]
    assert [ns for p in pages for ns in p] == ordered
    assert tx(store, lambda t: t.kv_namespaces(after="a", limit=2)) == ["a b", "a-b"]
    assert tx(store, lambda t: t.kv_namespaces(after="aa")) == ["ab", "e", "z", "é"]
    assert tx(store, lambda t: t.kv_namespaces(after="\U0010ffff")) == []
    assert tx(store, lambda t: t.kv_namespaces(limit=0)) == ordered


def test_kv_namespaces_see_the_transactions_own_writes(store: Store, clock: FakeClock) -> None:
    tx(store, lambda t: t.kv_put("old", "k", b"v"))

    def write_then_list(t: Tx) -> list[str]:
        t.kv_put("new", "k", b"v")
        t.kv_delete("old", "k")
        return t.kv_namespaces()

    assert tx(store, write_then_list) == ["new"]


def test_kv_list_pages_by_key_after_a_cursor(store: Store, clock: FakeClock) -> None:
    """``after`` (exclusive) and ``limit`` page a prefix's keys in binary order; a
    cursor before the prefix starts at its first key, one past it lists nothing."""
    keys = [f"p/{k}" for k in TRICKY] + ["o", "q", "p", "p0"]
    tx(store, lambda t: [t.kv_put("ns", k, k.encode()) for k in keys])
    ordered = sorted(k for k in keys if k.startswith("p/"))
    pages, after = [], ""
    while page := tx(store, lambda t, a=after: t.kv_list("ns", "p/", after=a, limit=6)):
        pages.append([k for k, _ in page])
        after = page[-1][0]
    assert pages == [ordered[:6], ordered[6:12], ordered[12:]]
    assert tx(store, lambda t: t.kv_list("ns", "p/", after="a", limit=1)) == [("p/10", b"p/10")]
    assert tx(store, lambda t: t.kv_list("ns", "p/", after="p0")) == []
    assert [k for k, _ in tx(store, lambda t: t.kv_list("ns", after="p", limit=3))] == [
        "p/10",
        "p/9",
        "p/A",
    ]
    assert [k for k, _ in tx(store, lambda t: t.kv_list("ns", limit=2))] == ["o", "p"]


def test_kv_listings_refuse_what_no_name_could_be(store: Store, clock: FakeClock) -> None:
    """A prefix or cursor a name could not hold (NUL, an unpaired surrogate, past a
    name's bytes), a limit that is not a nonnegative integer: Invalid, no effect."""
    for what, op in [
        ("prefix with NUL", lambda t: t.kv_list("ns", "a\x00")),
        ("prefix with a surrogate", lambda t: t.kv_list("ns", "\ud800")),
        ("prefix past a key's bytes", lambda t: t.kv_list("ns", "k" * 1025)),
        ("key cursor with NUL", lambda t: t.kv_list("ns", after="\x00")),
        ("key cursor past a key's bytes", lambda t: t.kv_list("ns", after="k" * 1025)),
        ("key cursor not text", lambda t: t.kv_list("ns", after=cast(str, 7))),
        ("negative key limit", lambda t: t.kv_list("ns", limit=-1)),
        ("key limit not an integer", lambda t: t.kv_list("ns", limit=cast(int, "5"))),
        ("namespace cursor with NUL", lambda t: t.kv_namespaces(after="a\x00")),
        ("namespace cursor with a surrogate", lambda t: t.kv_namespaces(after="\udfff")),
        ("namespace cursor past an ID's bytes", lambda t: t.kv_namespaces(after="n" * 256)),
        ("namespace cursor not text", lambda t: t.kv_namespaces(after=cast(str, None))),
        ("negative namespace limit", lambda t: t.kv_namespaces(limit=-1)),
        ("namespace limit a bool", lambda t: t.kv_namespaces(limit=True)),
        ("namespace limit a float", lambda t: t.kv_namespaces(limit=cast(int, 2.0))),
    ]:
        fails(store, Invalid, op, f"KV listing: {what}")
    # At the limits, and a limit past any LIMIT an engine holds: answered, not refused.
    tx(store, lambda t: t.kv_put("n" * 255, "k" * 1024, b"v"))
    assert tx(store, lambda t: t.kv_namespaces(after="n" * 254, limit=2**70)) == ["n" * 255]
    assert tx(store, lambda t: t.kv_list("n" * 255, "k" * 1024, after="k" * 1023)) == [
        ("k" * 1024, b"v")
    ]
