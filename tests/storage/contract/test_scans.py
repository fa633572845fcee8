"""Enumeration, live reads and event scans (checklist §14, EN)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from storage import Invalid, Store, Tx, WaitState, seconds

from ..support import (
    TTL,
    FakeClock,
    fails,
    ids,
    key,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    put_works,
    start_attempt,
    tx,
    update_work,
)
from ._helpers import CANCELLED, FAILED, READY, X_CANCELLED, X_FAILED, inventory, terminate

# ---------------------------------------------------------------------------------
# 14. Enumeration, live reads and event scans (EN)
# ---------------------------------------------------------------------------------


def test_lists_sorted_by_id(store: Store, clock: FakeClock) -> None:
    """EN-01: scopes, Work, attempts, timers and waits list sorted by ID; execution,
    timer and wait scans filtered by Work return only that Work's rows."""
    for scope_id in ("s3", "s1", "s2"):
        tx(store, lambda t, s=scope_id: t.put_scope(make_scope(s)))
    for work_id, execution_id in (("wb", "xb"), ("wc", "xc"), ("wa", "xa")):
        start_attempt(store, work_id=work_id, execution_id=execution_id)
    for timer_id, work_id in (("t3", "wa"), ("t1", "wb"), ("t2", "wa")):
        tx(store, lambda t, i=timer_id, w=work_id: t.put_timer(make_timer(i, t.now, work_id=w)))
    for wait_id, work_id, execution_id in (("wt2", "wa", "xa"), ("wt1", "wb", "xb")):
        tx(store, lambda t, i=wait_id, w=work_id, x=execution_id: park(t, x, make_wait(i, w, x)))

    def lists(t: Tx) -> dict[str, list[str]]:
        return {
            "scopes": ids(t.scopes()),
            "works": ids(t.works()),
            "executions": ids(t.executions()),
            "executions(wa)": ids(t.executions("wa")),
            "timers": ids(t.timers()),
            "timers(wa)": ids(t.timers("wa")),
            "waits": ids(t.waits()),
            "waits(wb)": ids(t.waits("wb")),
            "waits(wc)": ids(t.waits("wc")),
        }

    assert tx(store, lists) == {
        "scopes": ["s1", "s2", "s3"],
        "works": ["wa", "wb", "wc"],
        "executions": ["xa", "xb", "xc"],
        "executions(wa)": ["xa"],
        "timers": ["t1", "t2", "t3"],
        "timers(wa)": ["t2", "t3"],
        "waits": ["wt1", "wt2"],
        "waits(wb)": ["wt1"],
        "waits(wc)": [],
    }, f"EN-01: lists are not sorted by ID or not filtered by Work: {tx(store, lists)}"


def test_event_scan_paging(store: Store, clock: FakeClock) -> None:
    """EN-02 (resolution 29): exclusive cursor, ascending, limit caps, 0 is no limit,
    negative limit is Invalid, for every event scan."""
    tx(store, lambda t: [t.accept_event(make_event(f"e{n}", work_id="w1")) for n in range(1, 6)])
    seqs = {s.id: s.sequence for s in tx(store, lambda t: t.events())}

    def scans(t: Tx) -> dict[str, list[str]]:
        return {
            "all": ids(t.events()),
            "after e2": ids(t.events(after=seqs["e2"])),
            "after e2 limit 2": ids(t.events(after=seqs["e2"], limit=2)),
            "after last": ids(t.events(after=seqs["e5"])),
            "limit 0": ids(t.events(limit=0)),
            "limit 1": ids(t.events(limit=1)),
            "work after e3": ids(t.work_events("w1", after=seqs["e3"])),
            "unrouted limit 2": ids(t.unrouted_events(limit=2)),
            "scope '' after e4": ids(t.scope_events([""], after=seqs["e4"])),
        }

    assert tx(store, scans) == {
        "all": ["e1", "e2", "e3", "e4", "e5"],
        "after e2": ["e3", "e4", "e5"],
        "after e2 limit 2": ["e3", "e4"],
        "after last": [],
        "limit 0": ["e1", "e2", "e3", "e4", "e5"],
        "limit 1": ["e1"],
        "work after e3": ["e4", "e5"],
        "unrouted limit 2": ["e1", "e2"],
        "scope '' after e4": ["e5"],
    }, f"EN-02: event scans page wrongly: {tx(store, scans)}"
    for what, scan in [
        ("events", lambda t: t.events(limit=-1)),
        ("unrouted_events", lambda t: t.unrouted_events(limit=-1)),
        ("work_events", lambda t: t.work_events("w1", limit=-1)),
        ("scope_events", lambda t: t.scope_events([""], limit=-1)),
    ]:
        fails(store, Invalid, scan, f"EN-02 negative limit on {what}")


def test_unrouted_scan(store: Store, clock: FakeClock) -> None:
    """EN-03: the unrouted scan lists only Events without a routing checkpoint, with
    the same paging."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: [t.accept_event(make_event(f"e{n}")) for n in range(1, 5)])

    def route(t: Tx) -> None:
        t.mark_routed("e2", "", "dropped")
        t.mark_routed("e3", "w1", "routed")

    tx(store, route)
    first = tx(store, lambda t: t.event("e1").sequence)
    scans = tx(
        store, lambda t: (ids(t.unrouted_events()), ids(t.unrouted_events(after=first, limit=1)))
    )
    assert scans == (["e1", "e4"], ["e4"]), f"EN-03: unrouted scan returned {scans}"


def test_work_events_follow_naming_and_routing(store: Store, clock: FakeClock) -> None:
    """Named case work_events_follow_naming_and_routing (EN-04): a Work's Events are
    exactly those naming it or routed to it, each once, in acceptance order."""
    k1 = key("1")
    put_works(store, make_work("w1", keys=[k1]), make_work("w2"))
    plan = [
        ("e1", "w1", ""),  # names w1, never routed
        ("e2", "", "w1"),  # routed to w1
        ("e3", "w1", "w1"),  # names and routed: listed once
        ("e4", "w2", "w1"),  # names w2, routed to w1: in both
        ("e5", "", "w2"),  # routed to w2
        ("e6", "", ""),  # dropped
        ("e7", "", None),  # carries w1's key only: not w1's until routed
    ]
    for event_id, named, _ in plan:
        keys = [k1] if event_id == "e7" else []
        tx(
            store,
            lambda t, e=event_id, w=named, ks=keys: t.accept_event(
                make_event(e, work_id=w, keys=ks)
            ),
        )

    def scan(t: Tx) -> tuple[list[str], list[str]]:
        return ids(t.work_events("w1")), ids(t.work_events("w2"))

    assert tx(store, scan) == (["e1", "e3"], ["e4"]), (
        f"work events: before routing, a Work's Events are not those naming it: {tx(store, scan)}"
    )
    for event_id, _, routed in plan:
        if routed is None:
            continue
        disposition = "routed" if routed else "dropped"
        tx(store, lambda t, e=event_id, w=routed, d=disposition: t.mark_routed(e, w, d))
    expected = (["e1", "e2", "e3", "e4"], ["e4", "e5"])
    assert tx(store, scan) == expected, (
        f"work events: a Work's Events are not exactly those naming it or routed to it: "
        f"{tx(store, scan)}"
    )
    second = tx(store, lambda t: t.event("e2").sequence)
    paged = tx(store, lambda t: ids(t.work_events("w1", after=second, limit=1)))
    assert paged == ["e3"], f"work events: paging returned {paged}"


def test_live_reads_follow_state(store: Store, clock: FakeClock) -> None:
    """Named case live_reads_follow_state (EN-06, EN-07, WT-11): live_works,
    live_executions and active_waits follow every state change in the same commit."""

    def live(work_id: str = "") -> tuple[list[str], list[str], list[str]]:
        return tx(
            store,
            lambda t: (
                ids(t.live_works()),
                ids(t.live_executions(work_id)),
                ids(t.active_waits(work_id)),
            ),
        )

    def expect(step: str, works: list[str], executions: list[str], waits: list[str]) -> None:
        actual = live()
        assert actual == (works, executions, waits), (
            f"live reads: after {step} live reads are {actual}, "
            f"expected {(works, executions, waits)}"
        )

    put_works(store, make_work("w1"))
    expect("Work created ready", ["w1"], [], [])
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    expect("attempt created pending", ["w1"], ["x1"], [])
    tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    expect("claim", ["w1"], ["x1"], [])
    tx(store, lambda t: park(t, "x1", make_wait("wt1")))
    expect("park with a Wait", ["w1"], ["x1"], ["wt1"])
    tx(store, lambda t: t.accept_event(make_event("wake")))

    def wake(t: Tx) -> None:
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake"))
        t.claim("x1", "runner-a", t.now + TTL)

    tx(store, wake)
    expect("wake", ["w1"], ["x1"], [])
    tx(store, lambda t: terminate(t, "x1", X_FAILED, READY))
    expect("attempt failed, Work ready", ["w1"], [], [])
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    put_works(store, make_work("w2"))
    expect("attempt 2 and Work w2 created", ["w1", "w2"], ["x2"], [])
    assert live("w2") == (["w1", "w2"], [], []), "live reads: filter by Work returned others"
    tx(store, lambda t: terminate(t, "x2", X_CANCELLED, None))
    expect("pending attempt cancelled", ["w1", "w2"], [], [])
    update_work(store, "w1", state=FAILED)
    expect("Work failed", ["w2"], [], [])
    update_work(store, "w2", state=CANCELLED)
    expect("Work cancelled", [], [], [])
    assert ids(tx(store, lambda t: t.waits())) == ["wt1"], "live reads: history was dropped"


def test_recovery_inventory(store: Store, clock: FakeClock, reopen: Callable[[], Store]) -> None:
    """Scenario "recovery inventory" (EN-10, EN-01, EN-06): after reopening, the store
    enumerates the same scopes, Work, attempts, timers, waits, Events and KV, and
    recovery can go on from that inventory alone."""
    tx(
        store,
        lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2", parent_id="s1"))],
    )
    lease = start_attempt(store, keys=[key("1")])
    start_attempt(store, work_id="w2", execution_id="x2")

    def build(t: Tx) -> None:
        t.put_timer(make_timer("t-timeout", t.now + seconds(600), work_id="w1"))
        park(t, "x1", make_wait("wt1", keys=[key("1")], timeout_timer_id="t-timeout"))
        t.put_work(make_work("w3", scope_id="s2"))
        t.accept_event(make_event("e1", keys=[key("1")]))
        t.set_event_scope("e1", "s2")
        t.accept_event(make_event("e2"))
        t.mark_routed("e2", "", "dropped")
        t.kv_put("ns", "cursor", b"7")

    tx(store, build, lease=lease)
    before = inventory(store, "ns")
    reopened = reopen()
    after = inventory(reopened, "ns")
    assert after == before, "recovery inventory: the reopened store enumerates other records"

    def live(t: Tx) -> tuple[list[str], ...]:
        return (
            ids(t.live_works()),
            ids(t.live_executions()),
            ids(t.active_waits()),
            ids(t.unrouted_events()),
        )

    assert tx(reopened, live) == (["w1", "w2", "w3"], ["x1", "x2"], ["wt1"], ["e1"]), (
        f"recovery inventory: live reads after reopen are {tx(reopened, live)}"
    )
    clock.advance(seconds=TTL / 1e9 + 1)
    recovered = tx(reopened, lambda t: t.claim("x2", "runner-b", t.now + TTL))
    assert (recovered.owner, recovered.epoch) == ("runner-b", 2), (
        "recovery inventory: an expired lease could not be recovered after reopen"
    )


def test_find_events_filters_pages_and_orders(store: Store, clock: FakeClock) -> None:
    """EN-02, EN-08 (the operator's search): find_events selects by sequence window,
    sources, types, recorded scopes, Work (named or routed) and unrouted, combined with
    AND, ascending or newest first, and limits; cursors are exclusive."""
    tx(store, lambda t: [t.put_scope(make_scope(s)) for s in ("s1", "s2")])
    put_works(store, make_work("w1"), make_work("w2"))
    rows = [  # id, source, type, scope, named work
        ("e1", "github.acme", "push.created", "s1", ""),
        ("e2", "stripe.acct", "charge.failed", "s2", "w1"),
        ("e3", "github.acme", "issue.opened", "", ""),
        ("e4", "github.acme", "push.created", "s2", ""),
        ("e5", "cron.daily", "report.due", "s1", "w2"),
    ]

    def accept(t: Tx) -> None:
        for event_id, source, type_, scope, work in rows:
            event = make_event(event_id, source=source, delivery_id=event_id, work_id=work)
            t.accept_event(replace(event, type=type_))
            if scope:
                t.set_event_scope(event_id, scope)
        t.mark_routed("e4", "w1", "routed")
        t.mark_routed("e3", "", "dropped")

    tx(store, accept)

    def find(**kw: object) -> list[str]:
        return tx(store, lambda t: ids(t.find_events(**kw)))  # type: ignore[arg-type]

    assert find() == ["e1", "e2", "e3", "e4", "e5"], "find_events: unfiltered scan"
    assert find(newest_first=True) == ["e5", "e4", "e3", "e2", "e1"], "find_events: newest first"
    assert find(sources=["github.acme"]) == ["e1", "e3", "e4"], "find_events: source filter"
    assert find(types=["push.created", "report.due"]) == ["e1", "e4", "e5"], "find_events: types"
    assert find(scope_ids=["s2"]) == ["e2", "e4"], "find_events: scope filter"
    assert find(scope_ids=[""]) == ["e3"], "find_events: events with no scope"
    assert find(work_id="w1") == ["e2", "e4"], "find_events: named or routed to the Work"
    assert find(unrouted=True) == ["e1", "e2", "e5"], "find_events: unrouted only"
    assert find(sources=["github.acme"], types=["push.created"], scope_ids=["s2"]) == ["e4"]
    seq = {e.id: e.sequence for e in tx(store, lambda t: t.events())}
    window = find(after=seq["e2"], before=seq["e5"])
    assert window == ["e3", "e4"], "find_events: exclusive window"
    back = find(before=seq["e5"], limit=2, newest_first=True)
    assert back == ["e4", "e3"], "find_events: paging back"
    assert find(after=seq["e1"], limit=2) == ["e2", "e3"], "find_events: paging forward"
    fails(store, Invalid, lambda t: t.find_events(limit=-1), "find_events: negative limit")
    fails(store, Invalid, lambda t: t.find_events(sources="github.acme"), "find_events: a string")


def test_find_events_selects_by_actor(store: Store, clock: FakeClock) -> None:
    """The audit by person: ``actors`` keeps the Events any of them caused (an actor is
    kept on core.manual and core.action Events only), newest first, paged by sequence,
    with the other filters; an actor no Event has selects nothing."""
    rows = [  # id, source, actor
        ("m1", "core.manual", "operator:alice"),
        ("m2", "core.manual", "operator:bob"),
        ("h1", "github.acme", "operator:alice"),  # dropped at acceptance: not kept
        ("m3", "core.manual", "operator:alice"),
        ("a1", "core.action", "caller:ci"),
    ]
    tx(
        store,
        lambda t: [t.accept_event(make_event(i, source=s, actor=a)) for i, s, a in rows],
    )

    def find(**kw: object) -> list[str]:
        return tx(store, lambda t: ids(t.find_events(**kw)))  # type: ignore[arg-type]

    alice = ["operator:alice"]
    assert find(actors=alice, newest_first=True) == ["m3", "m1"], "find_events: one actor"
    assert find(actors=[*alice, "caller:ci"]) == ["m1", "m3", "a1"], "find_events: any of"
    assert find(actors=alice, types=["nope"]) == [], "find_events: actor and type"
    assert find(actors=["operator:carol"]) == [], "find_events: an actor with no Event"
    seq = {e.id: e.sequence for e in tx(store, lambda t: t.events())}
    assert find(actors=alice, before=seq["m3"], newest_first=True, limit=1) == ["m1"]
    fails(store, Invalid, lambda t: t.find_events(actors="operator:alice"), "actors: a string")


def test_find_events_selects_by_key(store: Store, clock: FakeClock) -> None:
    """Everything about a key: ``key`` keeps the Events carrying it among their keys
    (first or not), with the other filters, newest first and paged by sequence; odd
    characters and a 255-byte key are keys like any other."""
    odd = key("a/b c?d#%2F\u00e9" + "x" * 242, "shop/eu")  # 255 bytes in UTF-8
    rows = [  # id, keys, type
        ("e1", [key("o-1")], "order.placed"),
        ("e2", [key("o-2")], "order.placed"),
        ("e3", [key("o-9"), key("o-1")], "order.paid"),
        ("e4", [], "order.placed"),
        ("e5", [key("o-1")], "order.shipped"),
        ("e6", [odd], "order.placed"),
    ]
    tx(store, lambda t: [t.accept_event(make_event(i, keys=k, type=ty)) for i, k, ty in rows])

    def find(**kw: object) -> list[str]:
        return tx(store, lambda t: ids(t.find_events(**kw)))  # type: ignore[arg-type]

    assert find(key=key("o-1")) == ["e1", "e3", "e5"], "find_events: any of an Event's keys"
    assert find(key=key("o-1"), newest_first=True, limit=2) == ["e5", "e3"]
    assert find(key=key("o-1"), types=["order.placed"]) == ["e1"], "find_events: key and type"
    assert find(key=key("o-1", "other")) == [], "find_events: the source is part of the key"
    assert find(key=odd) == ["e6"], "find_events: an odd 255-byte key"
    seq = {e.id: e.sequence for e in tx(store, lambda t: t.events())}
    assert find(key=key("o-1"), before=seq["e5"], after=seq["e1"]) == ["e3"]
    fails(store, Invalid, lambda t: t.find_events(key="o-1"), "key: a string")  # type: ignore[arg-type]
