"""Timers (checklist §17, TM)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from storage import Conflict, Event, Invalid, NotFound, Store, TimerNext, Tx, seconds

from ..support import Crash, FakeClock, crashes, fails, ids, make_event, make_timer, tx

# ---------------------------------------------------------------------------------
# 17. Timers (TM)
# ---------------------------------------------------------------------------------


def _tick(n: int) -> Event:
    return make_event(f"tick-{n}", source="core.timer", type="schedule.tick")


def test_timer_fire_fills_times(store: Store, clock: FakeClock) -> None:
    """TM-01: fire accepts the template with occurred_at = the due time and
    received_at = tx.now."""
    due = clock() + seconds(60)
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", due, template=_tick(1))))
    assert (timer.fire_at, timer.template) == (due, _tick(1)), "TM-01: timer not stored"
    clock.advance(seconds=90)
    fired, now = tx(store, lambda t: (t.fire_timer("t1", timer.revision), t.now))
    assert (fired.event.occurred_at, fired.event.received_at) == (due, now), (
        f"TM-01: fired Event times are {fired.event.occurred_at}, {fired.event.received_at}"
    )
    assert fired.event == replace(_tick(1), occurred_at=due, received_at=now), (
        "TM-01: the fired Event is not the template"
    )
    assert tx(store, lambda t: t.event("tick-1")) == fired, "TM-01: fired Event not stored"


def test_timer_one_shot(store: Store, clock: FakeClock) -> None:
    """Scenario "timer one-shot" (TM-02): firing without next accepts the Event and
    removes the timer in the same transaction; it cannot fire again."""
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    fired = tx(store, lambda t: t.fire_timer("t1", timer.revision))
    assert fired.id == "tick-1", "timer one-shot: fire did not accept the template"

    def after(t: Tx) -> tuple[list[str], list[str]]:
        return ids(t.timers()), ids(t.events())

    assert tx(store, after) == ([], ["tick-1"]), "timer one-shot: the timer was not removed"
    fails(store, NotFound, lambda t: t.timer("t1"), "timer one-shot: fired timer readable")
    fails(
        store,
        (NotFound, Conflict),
        lambda t: t.fire_timer("t1", timer.revision),
        "timer one-shot: second fire",
    )
    assert ids(tx(store, lambda t: t.events())) == ["tick-1"], "timer one-shot: fired twice"


def test_timer_rearm(store: Store, clock: FakeClock) -> None:
    """TM-03, TM-09: fire with next rearms the same timer ID (revision + 1); next
    must be later than the fired due time and carry another Event identity; an
    already overdue next time is allowed."""
    due = clock()
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", due, template=_tick(1))))
    clock.advance(seconds=3600)
    fails(
        store,
        Invalid,
        lambda t: t.fire_timer("t1", timer.revision, TimerNext(due, _tick(2))),
        "TM-03 next not later than the fired due time",
    )
    fails(
        store,
        Invalid,
        lambda t: t.fire_timer("t1", timer.revision, TimerNext(due + 1, _tick(1))),
        "TM-03 next with the fired Event identity",
    )
    assert tx(store, lambda t: t.events()) == [], "TM-03: a refused rearm accepted the Event"
    overdue = due + seconds(60)  # still in the past: missed-slot policy is not storage's
    tx(store, lambda t: t.fire_timer("t1", timer.revision, TimerNext(overdue, _tick(2))))
    rearmed = tx(store, lambda t: t.timer("t1"))
    assert (rearmed.fire_at, rearmed.template, rearmed.revision) == (
        overdue,
        _tick(2),
        timer.revision + 1,
    ), f"TM-03: the rearmed timer is {rearmed}"
    assert ids(tx(store, lambda t: t.due_timers(clock()))) == ["t1"], "TM-09: overdue not due"


def test_timer_template_identity(store: Store, clock: FakeClock) -> None:
    """TM-04: a timer (created, updated or rearmed) whose template reuses an accepted
    Event identity, by ID or by (source, delivery_id), conflicts."""
    tx(store, lambda t: t.accept_event(_tick(1)))
    same_delivery = replace(_tick(9), delivery_id=_tick(1).delivery_id)
    same_id = replace(_tick(1), delivery_id="d-other")
    for what, template in [("delivery", same_delivery), ("ID", same_id)]:
        fails(
            store,
            Conflict,
            lambda t, e=template: t.put_timer(make_timer("t1", t.now, template=e)),
            f"TM-04 template reusing an accepted Event {what}",
        )
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(2))))
    fails(
        store,
        Conflict,
        lambda t: t.put_timer(replace(timer, template=same_delivery)),
        "TM-04 update to an accepted identity",
    )
    fails(
        store,
        Conflict,
        lambda t: t.fire_timer("t1", timer.revision, TimerNext(timer.fire_at + 1, _tick(1))),
        "TM-04 rearm with an accepted identity",
    )
    assert tx(store, lambda t: t.timer("t1")) == timer, "TM-04: a refused timer write was kept"


def test_timer_early_and_stale_fire(store: Store, clock: FakeClock) -> None:
    """TM-05: firing before the due time is Invalid; a stale revision conflicts; an
    unknown timer is NotFound."""
    due = clock() + seconds(60)
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", due, template=_tick(1))))
    clock.set(due - 1)
    fails(store, Invalid, lambda t: t.fire_timer("t1", timer.revision), "TM-05 early fire")
    updated = tx(store, lambda t: t.put_timer(replace(timer, purpose="moved")))
    clock.set(due)
    fails(store, Conflict, lambda t: t.fire_timer("t1", timer.revision), "TM-05 stale fire")
    fails(store, NotFound, lambda t: t.fire_timer("ghost", 1), "TM-05 unknown timer")
    assert tx(store, lambda t: t.events()) == [], "TM-05: a refused fire accepted its Event"
    tx(store, lambda t: t.fire_timer("t1", updated.revision))  # due exactly now: fires


def test_timer_rollback(store: Store, clock: FakeClock) -> None:
    """Scenario "timer rollback" (TM-06, KV-06): a fire and its KV cursor update
    commit together; a rolled-back fire leaves timer, Event and cursor unchanged."""
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    tx(store, lambda t: t.kv_put("schedule", "cursor", b"0"))

    def fire(t: Tx, crash: bool) -> None:
        t.fire_timer("t1", timer.revision, TimerNext(timer.fire_at + seconds(60), _tick(2)))
        t.kv_put("schedule", "cursor", b"1")
        if crash:
            raise Crash("crash after fire")

    crashes(store, lambda t: fire(t, True), "timer rollback: crashed fire")

    def state(t: Tx) -> tuple[object, ...]:
        return t.timer("t1"), ids(t.events()), t.kv_get("schedule", "cursor")

    assert tx(store, state) == (timer, [], b"0"), (
        "timer rollback: a rolled-back fire left its timer, Event or cursor changed"
    )
    tx(store, lambda t: fire(t, False))
    rearmed, events, cursor = tx(store, state)
    assert (events, cursor) == (["tick-1"], b"1"), "timer rollback: fire and cursor not committed"
    assert cast(Any, rearmed).revision == timer.revision + 1, "timer rollback: not rearmed"


def test_timer_recreation(store: Store, clock: FakeClock) -> None:
    """Scenario "timer recreation" (TM-07, TM-08): revisions stay monotonic across
    delete and recreate, so an old fire or delete command cannot touch the
    replacement."""
    first = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    fails(store, Conflict, lambda t: t.delete_timer("t1", first.revision + 1), "TM-08 delete")
    tx(store, lambda t: t.delete_timer("t1", first.revision))
    fails(store, NotFound, lambda t: t.delete_timer("t1", first.revision), "TM-08 deleted")
    second = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(2))))
    assert second.revision > first.revision, (
        f"timer recreation: recreated timer has revision {second.revision} after {first.revision}"
    )
    fails(
        store,
        Conflict,
        lambda t: t.fire_timer("t1", first.revision),
        "timer recreation: an old fire command hit the replacement",
    )
    fails(
        store,
        Conflict,
        lambda t: t.delete_timer("t1", first.revision),
        "timer recreation: an old delete command hit the replacement",
    )
    updated = tx(store, lambda t: t.put_timer(replace(second, purpose="x")))
    tx(store, lambda t: t.delete_timer("t1", updated.revision))
    third = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(3))))
    assert third.revision > updated.revision, "timer recreation: revision went backwards"
    fired = tx(store, lambda t: t.fire_timer("t1", third.revision))
    assert fired.id == "tick-3", "timer recreation: the replacement did not fire"


def test_timer_create_and_update(store: Store, clock: FakeClock) -> None:
    """TM-08, ID-04 (lead rule): revision 0 on an existing timer conflicts; update
    needs the current revision; unknown delete is NotFound."""
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    fails(
        store,
        Conflict,
        lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(2))),
        "TM-08 create over an existing timer",
    )
    fails(store, NotFound, lambda t: t.delete_timer("ghost", 1), "TM-08 delete unknown")
    assert tx(store, lambda t: t.timers()) == [timer], "TM-08: a refused timer write was kept"


def test_due_timers(store: Store, clock: FakeClock) -> None:
    """TM-01, TM-09 (lead rule): due_timers(now, limit) lists timers with fire_at <=
    now, earliest first, ties by ID; storage fires nothing on its own."""
    base = clock()
    plan = [("t-c", 20), ("t-a", 10), ("t-b", 10), ("t-d", 30), ("t-late", 3600)]
    for n, (timer_id, offset) in enumerate(plan):
        timer = make_timer(timer_id, base + seconds(offset), template=_tick(n))
        tx(store, lambda t, timer=timer: t.put_timer(timer))
    clock.advance(seconds=7200)
    due = tx(store, lambda t: ids(t.due_timers(base + seconds(20))))
    assert due == ["t-a", "t-b", "t-c"], f"TM-09: due_timers returned {due}"
    assert tx(store, lambda t: ids(t.due_timers(base + seconds(30), limit=2))) == ["t-a", "t-b"]
    assert tx(store, lambda t: t.due_timers(base)) == [], "TM-09: a future timer was due"
    assert tx(store, lambda t: t.events()) == [], "TM-09: storage fired a timer by itself"
    assert len(tx(store, lambda t: t.timers())) == 5, "TM-09: storage removed a due timer"
