"""Checkpoints: acceptance and routing (checklist §13, CP)."""

from __future__ import annotations

from dataclasses import replace

from storage import Conflict, Invalid, NotFound, Store, Tx, seconds

from ..support import (
    Crash,
    FakeClock,
    crashes,
    fails,
    ids,
    key,
    make_event,
    make_execution,
    make_timer,
    make_work,
    put_works,
    tx,
)
from ._helpers import READY, RUNNING, stored_state

# ---------------------------------------------------------------------------------
# 13. Checkpoints: acceptance and routing (CP)
# ---------------------------------------------------------------------------------


def test_acceptance_is_not_acknowledged_before_commit(store: Store, clock: FakeClock) -> None:
    """CP-01: an Event accepted in a callback that then fails is not stored; the same
    delivery later is added anew."""

    def accept_then_fail(t: Tx) -> None:
        t.accept_event(make_event("e1"))
        raise Crash("failure after accept_event")

    crashes(store, accept_then_fail, "CP-01 accept then failure")
    assert tx(store, lambda t: t.events()) == [], "CP-01: a rolled-back acceptance was stored"
    _, added = tx(store, lambda t: t.accept_event(make_event("e1")))
    assert added, "CP-01: a delivery accepted in a rolled-back tx was treated as a duplicate"


def test_route_replay(store: Store, clock: FakeClock) -> None:
    """Scenario "route replay" (CP-06, CP-04): after acceptance commits and processing
    fails, the Event is still unrouted and replayable; replaying the same checkpoint
    is a no-op and a different one conflicts."""
    put_works(store, make_work("w1", keys=[key("1")]), make_work("w2"))
    tx(store, lambda t: t.accept_event(make_event("e1", keys=[key("1")])))

    def process(t: Tx) -> None:
        (event,) = t.unrouted_events()
        work = t.work_by_key(event.event.keys[0])
        t.put_work(replace(work, state=RUNNING))
        t.mark_routed(event.id, work.id, "routed")
        raise Crash("crash during processing")

    crashes(store, process, "route replay: crashed processing")
    assert ids(tx(store, lambda t: t.unrouted_events())) == ["e1"], (
        "route replay: an Event whose processing failed is not unrouted"
    )
    assert stored_state(store, "w1") == READY, "route replay: a failed route left its effect"
    tx(store, lambda t: t.mark_routed("e1", "w1", "routed"))
    routed = tx(store, lambda t: t.event("e1"))
    tx(store, lambda t: t.mark_routed("e1", "w1", "routed"))
    assert tx(store, lambda t: t.event("e1")) == routed, "route replay: same replay changed route"
    fails(store, Conflict, lambda t: t.mark_routed("e1", "w2", "routed"), "route replay: work")
    fails(store, Conflict, lambda t: t.mark_routed("e1", "w1", "dropped"), "route replay: disp")
    assert tx(store, lambda t: t.event("e1")) == routed, "route replay: a conflicting replay won"
    assert tx(store, lambda t: t.unrouted_events()) == [], "route replay: routed Event unrouted"


def _route_effects(store: Store) -> list[str]:
    def read(t: Tx) -> list[str]:
        present = []
        if "w1" in ids(t.works()):
            present.append("work")
        if t.executions():
            present.append("execution")
        if t.timers():
            present.append("timer")
        if t.kv_list("router"):
            present.append("kv")
        if "derived" in ids(t.events()):
            present.append("derived event")
        if t.event("e1").routed:
            present.append("checkpoint")
        return present

    return tx(store, read)


def test_atomic_route_effects(store: Store, clock: FakeClock) -> None:
    """Scenario "atomic route effects" (CP-03, CP-06, T-09): the route effects and
    MarkRouted commit together; a crash during processing leaves none of them."""
    tx(store, lambda t: t.accept_event(make_event("e1", keys=[key("1")])))

    def process(t: Tx, crash: bool) -> None:
        t.put_work(make_work("w1", keys=[key("1")]))
        t.put_execution(make_execution("x1", "w1"))
        t.put_timer(make_timer("t-w1", t.now + seconds(60), work_id="w1"))
        t.kv_put("router", "cursor", b"1")
        t.accept_event(make_event("derived", causation_id="e1", work_id="w1"))
        t.mark_routed("e1", "w1", "routed")
        if crash:
            raise Crash("crash during processing")

    crashes(store, lambda t: process(t, True), "atomic route effects: crashed processing")
    left = _route_effects(store)
    assert left == [], f"atomic route effects: a failed processing transaction left {left}"
    tx(store, lambda t: process(t, False))
    kept = _route_effects(store)
    everything = ["work", "execution", "timer", "kv", "derived event", "checkpoint"]
    assert kept == everything, f"atomic route effects: a committed processing tx kept {kept}"


def test_mark_routed_rules(store: Store, clock: FakeClock) -> None:
    """CP-03, CP-04, CP-05 (resolution 14): disposition nonempty; an empty Work only
    for non-routed dispositions; unknown Event or Work -> NotFound; drops keep their
    disposition."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: [t.accept_event(make_event(e)) for e in ("e1", "e2", "e3")])
    fails(store, NotFound, lambda t: t.mark_routed("ghost", "w1", "routed"), "CP-03 unknown")
    fails(store, Invalid, lambda t: t.mark_routed("e1", "w1", ""), "CP-05 empty disposition")
    fails(store, Invalid, lambda t: t.mark_routed("e1", "", "routed"), "CP-05 routed nowhere")
    fails(store, NotFound, lambda t: t.mark_routed("e1", "ghost", "routed"), "CP-03 work")
    assert not tx(store, lambda t: t.event("e1").routed), "CP-03: a refused route was kept"

    def drop(t: Tx) -> None:
        t.mark_routed("e1", "", "dropped")
        t.mark_routed("e2", "", "unmatched")

    tx(store, drop)
    tx(store, lambda t: t.mark_routed("e1", "", "dropped"))
    routes = tx(store, lambda t: [t.event(e).route for e in ("e1", "e2")])
    assert [(r.work_id, r.disposition) if r else None for r in routes] == [
        ("", "dropped"),
        ("", "unmatched"),
    ], f"CP-05: drop dispositions were not kept: {routes}"
    fails(store, Conflict, lambda t: t.mark_routed("e1", "w1", "routed"), "CP-04 drop -> route")
    assert ids(tx(store, lambda t: t.unrouted_events())) == ["e3"], "CP-05: drops still unrouted"


def test_per_work_order(store: Store, clock: FakeClock) -> None:
    """Scenario "per-Work order" (CP-07, EN-03, EN-04): unrouted and per-Work scans
    return acceptance order; routing one Work does not wait for another."""
    k1, k2 = key("1"), key("2")
    put_works(store, make_work("w1", keys=[k1]), make_work("w2", keys=[k2]))
    plan = [("e1", k1, ""), ("e2", k2, ""), ("e3", None, "w1"), ("e4", k1, ""), ("e5", k2, "")]
    for event_id, k, work_id in plan:
        keys = [k] if k else []
        tx(
            store,
            lambda t, e=event_id, ks=keys, w=work_id: t.accept_event(
                make_event(e, keys=ks, work_id=w)
            ),
        )
    unrouted = tx(store, lambda t: t.unrouted_events())
    assert ids(unrouted) == ["e1", "e2", "e3", "e4", "e5"], "per-Work order: unrouted order"
    assert [e.sequence for e in unrouted] == sorted(e.sequence for e in unrouted), (
        "per-Work order: unrouted scan not in sequence order"
    )
    # w2 progresses while w1's earlier Events are still unrouted.
    for event_id in ("e2", "e5"):
        tx(store, lambda t, e=event_id: t.mark_routed(e, "w2", "routed"))
    assert ids(tx(store, lambda t: t.unrouted_events())) == ["e1", "e3", "e4"], (
        "per-Work order: routing w2 disturbed w1's unrouted Events"
    )
    for event_id in ("e1", "e3", "e4"):
        tx(store, lambda t, e=event_id: t.mark_routed(e, "w1", "routed"))
    scans = tx(store, lambda t: (ids(t.work_events("w1")), ids(t.work_events("w2"))))
    assert scans == (["e1", "e3", "e4"], ["e2", "e5"]), f"per-Work order: work_events {scans}"
