"""Events and acceptance, actor and Event scope (checklist §3-5: EV, AC, ES)."""

from __future__ import annotations

from dataclasses import replace

from storage import Conflict, Invalid, NotFound, Store, StoredEvent, Tx, seconds

from ..support import (
    EVENT_SOURCE,
    FakeClock,
    fails,
    ids,
    key,
    make_event,
    make_scope,
    make_work,
    payload,
    put_works,
    raises,
    tx,
)

# ---------------------------------------------------------------------------------
# 3. Events and acceptance (EV)
# ---------------------------------------------------------------------------------


def test_delivery_identity_versus_correlation(store: Store, clock: FakeClock) -> None:
    """Scenario "delivery identity versus correlation" (EV-02, CK-09, EV-07): a
    repeated (source, delivery_id) returns the original envelope with added=False and
    stores nothing, even under another ID and key; distinct deliveries sharing a key
    are all kept."""
    k, other = key("issue-7"), key("issue-8")
    put_works(store, make_work("w1", keys=[k]))
    first = make_event("e1", delivery_id="d1", keys=[k], payload=payload(b'{"v": 1}'))

    def accept_two(t: Tx) -> tuple[StoredEvent, bool, StoredEvent, bool]:
        a, added_a = t.accept_event(first)
        b, added_b = t.accept_event(make_event("e2", delivery_id="d2", keys=[k]))
        return a, added_a, b, added_b

    e1, added1, e2, added2 = tx(store, accept_two)
    assert added1, "delivery identity: a new delivery was not added"
    assert added2, "delivery identity: a second delivery sharing a key was not added"
    assert e2.sequence > e1.sequence, "delivery identity: sequences do not increase"
    latest = tx(store, lambda t: t.latest_sequence())
    retry = make_event("e1-retry", delivery_id="d1", keys=[other], payload=payload(b"[2]"))
    stored, added = tx(store, lambda t: t.accept_event(retry))
    assert not added, "delivery identity: a duplicate delivery reported added=True"
    assert stored == e1, (
        f"delivery identity: a duplicate delivery did not return the original: {stored}"
    )

    def after(t: Tx) -> tuple[int, list[str], str, list[str]]:
        return (
            t.latest_sequence(),
            ids(t.events()),
            t.event_by_delivery(EVENT_SOURCE, "d1").id,
            ids(t.work_events("w1")),
        )

    sequence, events, by_delivery, _ = tx(store, after)
    assert events == ["e1", "e2"], f"delivery identity: duplicate stored again: {events}"
    assert sequence == latest, "delivery identity: a duplicate delivery moved latest_sequence"
    assert by_delivery == "e1", "delivery identity: lookup by delivery lost the original"
    fails(store, NotFound, lambda t: t.event("e1-retry"), "delivery identity: retry ID stored")

    # The same delivery ID under another source is another delivery.
    third, added3 = tx(
        store, lambda t: t.accept_event(make_event("e3", source="other.hooks", delivery_id="d1"))
    )
    assert added3, "delivery identity: identity ignored the source and merged two deliveries"
    assert third.id == "e3", "delivery identity: another source's delivery returned the original"


def test_accept_assigns_increasing_sequence(store: Store, clock: FakeClock) -> None:
    """EV-01, EN-05: a new delivery is added with a sequence above every earlier one,
    no routing checkpoint and no scope; latest_sequence follows (0 when empty)."""
    assert tx(store, lambda t: t.latest_sequence()) == 0, "EN-05: empty store sequence is not 0"
    sequences: list[int] = []
    for batch in (["e1", "e2"], ["e3"]):

        def accept(t: Tx, names: list[str] = batch) -> None:
            for name in names:
                stored, added = t.accept_event(make_event(name))
                assert added, f"EV-01: new Event {name} reported added=False"
                assert stored.route is None, "EV-01: a new Event already has a route"
                assert stored.scope_id == "", "EV-01: a new Event already has a scope"
                sequences.append(stored.sequence)

        tx(store, accept)
    assert sequences == sorted(set(sequences)), (
        f"EV-01: acceptance sequences are not strictly increasing: {sequences}"
    )
    assert sequences[0] > 0, f"EV-01: the first sequence is {sequences[0]}, not positive"
    assert tx(store, lambda t: t.latest_sequence()) == sequences[-1], (
        "EN-05: latest_sequence is not the highest committed sequence"
    )


def test_event_id_reuse_conflicts(store: Store, clock: FakeClock) -> None:
    """EV-03: an Event ID already used by another delivery conflicts."""
    tx(store, lambda t: t.accept_event(make_event("e1", delivery_id="d1")))
    fails(
        store,
        Conflict,
        lambda t: t.accept_event(make_event("e1", delivery_id="d2")),
        "EV-03 Event ID reused by another delivery",
    )
    fails(
        store,
        NotFound,
        lambda t: t.event_by_delivery(EVENT_SOURCE, "d2"),
        "EV-03 conflicting delivery was stored",
    )


def test_envelope_is_immutable(store: Store, clock: FakeClock) -> None:
    """EV-04, EV-05: routing and scope live beside the envelope; the envelope reads
    back identical and an Event accepted without a Work never gains one."""
    tx(store, lambda t: t.put_scope(make_scope("s1")))
    put_works(store, make_work("w1"))
    original, _ = tx(store, lambda t: t.accept_event(make_event("e1", keys=[key("1")])))
    clock.advance(seconds=2)

    def route(t: Tx) -> int:
        t.mark_routed("e1", "w1", "routed")
        t.set_event_scope("e1", "s1")
        return t.now

    routed_at = tx(store, route)
    after = tx(store, lambda t: t.event("e1"))
    assert after.event == original.event, "EV-04: routing or scope changed the Event envelope"
    assert after.event.work_id == "", "EV-05: routing wrote a Work ID into the envelope"
    assert after.route is not None, "EV-04: route not recorded"
    assert after.route.work_id == "w1", "EV-04: route recorded another Work"
    assert (after.route.disposition, after.route.routed_at) == ("routed", routed_at), (
        "EV-04: route metadata is not (disposition, tx.now)"
    )
    assert after.sequence == original.sequence, "EV-04: routing changed the sequence"


def test_causation(store: Store, clock: FakeClock) -> None:
    """EV-06: a causation ID must name a stored Event (NotFound) and not the Event
    itself (Invalid); derived_events lists the Events an Event caused."""

    def accept(t: Tx) -> None:
        t.accept_event(make_event("root"))
        t.accept_event(make_event("child-1", causation_id="root"))  # same tx counts

    tx(store, accept)
    tx(store, lambda t: t.accept_event(make_event("child-2", causation_id="root")))
    tx(store, lambda t: t.accept_event(make_event("grandchild", causation_id="child-1")))
    fails(
        store,
        NotFound,
        lambda t: t.accept_event(make_event("orphan", causation_id="ghost")),
        "EV-06 dangling causation",
    )
    fails(
        store,
        Invalid,
        lambda t: t.accept_event(make_event("self", causation_id="self")),
        "EV-06 self causation",
    )

    def derived(t: Tx) -> tuple[list[str], list[str], list[str]]:
        return (
            ids(t.derived_events("root")),
            ids(t.derived_events("child-1")),
            ids(t.derived_events("grandchild")),
        )

    assert tx(store, derived) == (["child-1", "child-2"], ["grandchild"], []), (
        "EV-06: derived_events does not list exactly the Events caused, in order"
    )


def test_event_lookup(store: Store, clock: FakeClock) -> None:
    """EV-07: lookup by ID or by delivery identity; unknown -> NotFound."""
    stored, _ = tx(store, lambda t: t.accept_event(make_event("e1", delivery_id="d1")))

    def read(t: Tx) -> tuple[StoredEvent, StoredEvent]:
        return t.event("e1"), t.event_by_delivery(EVENT_SOURCE, "d1")

    assert tx(store, read) == (stored, stored), "EV-07: lookup did not return the stored Event"
    fails(store, NotFound, lambda t: t.event("ghost"), "EV-07 unknown Event ID")
    fails(store, NotFound, lambda t: t.event_by_delivery(EVENT_SOURCE, "d2"), "EV-07 delivery")
    fails(store, NotFound, lambda t: t.event_by_delivery("other", "d1"), "EV-07 other source")


def test_invalid_event_stores_nothing(store: Store, clock: FakeClock) -> None:
    """EV-08, T-10: an invalid Event is refused, stores nothing and consumes no
    sequence; required fields id/source/delivery_id must be nonempty."""
    tx(store, lambda t: t.accept_event(make_event("e0")))
    before = tx(store, lambda t: t.latest_sequence())

    def attempt(t: Tx) -> StoredEvent:
        for what, bad in [
            ("empty id", replace(make_event("e1"), id="")),
            ("empty source", replace(make_event("e1"), source="")),
            ("empty delivery", replace(make_event("e1"), delivery_id="")),
            ("bad type", make_event("e1", type="nodot")),
            ("bad payload", make_event("e1", payload=payload(b"{oops"))),
        ]:
            raises(Invalid, lambda bad=bad: t.accept_event(bad), f"EV-08 {what}")
        stored, _ = t.accept_event(make_event("e1"))
        return stored

    stored = tx(store, attempt)
    assert stored.sequence == before + 1, (
        f"EV-08: refused Events consumed sequences ({before} -> {stored.sequence})"
    )
    assert ids(tx(store, lambda t: t.events())) == ["e0", "e1"], "EV-08: an invalid Event stored"


def test_event_times(store: Store, clock: FakeClock) -> None:
    """EV-01 (lead rule): received_at is always tx.now; occurred_at 0 means tx.now;
    an explicit occurred_at is kept. Event.work_id is not checked for existence."""
    past = clock() - seconds(3600)

    def accept(t: Tx) -> tuple[int, StoredEvent, StoredEvent]:
        a, _ = t.accept_event(replace(make_event("e1", work_id="no-such-work"), received_at=1))
        b, _ = t.accept_event(make_event("e2", occurred_at=past))
        return t.now, a, b

    now, a, b = tx(store, accept)
    assert (a.event.received_at, a.event.occurred_at) == (now, now), (
        "EV-01: received_at/occurred_at of a new Event are not tx.now"
    )
    assert (b.event.received_at, b.event.occurred_at) == (now, past), (
        "EV-01: an explicit occurred_at was not kept"
    )
    assert a.event.work_id == "no-such-work", "EV-05: the Event's Work ID was rewritten"
    assert tx(store, lambda t: t.event("e1")) == a, "EV-01: stored Event differs from returned"


# ---------------------------------------------------------------------------------
# 4. Actor (AC)
# ---------------------------------------------------------------------------------


def test_event_actor_round_trip(store: Store, clock: FakeClock) -> None:
    """Named case event_actor_round_trip (AC-02..AC-05): the actor of a core.manual
    and a core.action Event survives acceptance, Event, Events and a duplicate
    delivery carrying another actor; other sources drop it."""
    manual = make_event("m1", source="core.manual", actor="operator:alice")
    action = make_event("a1", source="core.action", actor="github:octocat")
    hook = make_event("h1", source="github.hooks", actor="github:octocat")

    def accept(t: Tx) -> list[str]:
        return [t.accept_event(e)[0].event.actor for e in (manual, action, hook)]

    assert tx(store, accept) == ["operator:alice", "github:octocat", ""], (
        "event actor: acceptance did not keep core actors and drop the others"
    )

    def read(t: Tx) -> tuple[list[str], list[str]]:
        return (
            [t.event(i).event.actor for i in ("m1", "a1", "h1")],
            [s.event.actor for s in t.events()],
        )

    expected = ["operator:alice", "github:octocat", ""]
    by_id, scanned = tx(store, read)
    assert by_id == expected, f"event actor: Event(id) lost the actor: {by_id}"
    assert scanned == expected, f"event actor: Events() lost the actor: {scanned}"
    dup = replace(manual, id="m1-retry", actor="operator:mallory")
    stored, added = tx(store, lambda t: t.accept_event(dup))
    assert not added, "event actor: a duplicate delivery reported added=True"
    assert stored.event.actor == "operator:alice", (
        "event actor: a duplicate delivery replaced the original actor"
    )
    assert tx(store, lambda t: t.event("m1").event.actor) == "operator:alice", (
        "event actor: the stored actor changed after a duplicate delivery"
    )


def test_actor_format(store: Store, clock: FakeClock) -> None:
    """AC-01, AC-03: on core.manual and core.action a nonempty actor must be
    kind:id; empty is allowed."""

    def check(t: Tx) -> None:
        for n, bad in enumerate(["alice", ":alice", "operator:", "operator"]):
            for source in ("core.manual", "core.action"):
                event = make_event(f"{source}-{n}", source=source, actor=bad)
                raises(Invalid, lambda e=event: t.accept_event(e), f"AC-01 actor {bad!r}")
        t.accept_event(make_event("anon", source="core.action"))

    tx(store, check)
    assert ids(tx(store, lambda t: t.events())) == ["anon"], "AC-01: malformed actor stored"
    assert tx(store, lambda t: t.event("anon").event.actor) == "", "AC-03: empty actor changed"


# ---------------------------------------------------------------------------------
# 5. Event scope (ES)
# ---------------------------------------------------------------------------------


def test_event_scope_recorded_once_and_indexed(store: Store, clock: FakeClock) -> None:
    """Named case event_scope_recorded_once_and_indexed (ES-01..ES-06): the scope is
    write-once, survives routing and a duplicate delivery, and selects exactly what
    scope_events returns."""
    put_works(store, make_work("w1"))

    def setup(t: Tx) -> None:
        t.put_scope(make_scope("s1"))
        t.put_scope(make_scope("s2"))
        for event_id, scope_id in [("e1", "s1"), ("e2", "s2"), ("e3", ""), ("e4", "s1")]:
            t.accept_event(make_event(event_id))
            if scope_id:
                t.set_event_scope(event_id, scope_id)

    tx(store, setup)
    assert tx(store, lambda t: t.event("e1").scope_id) == "s1", "event scope: not recorded"
    tx(store, lambda t: t.set_event_scope("e1", "s1"))
    fails(store, Conflict, lambda t: t.set_event_scope("e1", "s2"), "event scope rewritten")
    assert tx(store, lambda t: t.event("e1").scope_id) == "s1", "event scope: scope rewritten"

    tx(store, lambda t: t.mark_routed("e1", "w1", "routed"))
    assert tx(store, lambda t: t.event("e1").scope_id) == "s1", "event scope: lost on routing"
    dup, added = tx(store, lambda t: t.accept_event(make_event("e1-retry", delivery_id="d-e1")))
    assert not added, "event scope: a duplicate delivery reported added=True"
    assert dup.scope_id == "s1", "event scope: a duplicate delivery did not return the scope"
    assert dup.route is not None, "event scope: a duplicate delivery lost the route"

    def selected(t: Tx) -> dict[str, list[str]]:
        return {
            "s1": ids(t.scope_events(["s1"])),
            "s1+s2": ids(t.scope_events(["s1", "s2"])),
            "none": ids(t.scope_events([""])),
            "s2+none": ids(t.scope_events(["s2", ""])),
        }

    expected = {
        "s1": ["e1", "e4"],
        "s1+s2": ["e1", "e2", "e4"],
        "none": ["e3"],
        "s2+none": ["e2", "e3"],
    }
    assert tx(store, selected) == expected, "event scope: scope_events selected the wrong Events"
    first = tx(store, lambda t: t.event("e1").sequence)
    paged = tx(store, lambda t: ids(t.scope_events(["s1", "s2"], after=first, limit=1)))
    assert paged == ["e2"], f"event scope: scope_events paging is wrong: {paged}"
    tx(store, lambda t: t.set_event_scope("e3", "s2"))
    moved = tx(store, lambda t: (ids(t.scope_events([""])), ids(t.scope_events(["s2"]))))
    assert moved == ([], ["e2", "e3"]), "event scope: a later recorded scope is not indexed"


def test_event_scope_errors(store: Store, clock: FakeClock) -> None:
    """ES-03 (lead rule): empty scope -> Invalid; unknown Event or Scope -> NotFound."""
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.accept_event(make_event("e1"))])
    fails(store, Invalid, lambda t: t.set_event_scope("e1", ""), "ES-03 empty scope")
    fails(store, NotFound, lambda t: t.set_event_scope("ghost", "s1"), "ES-03 unknown Event")
    fails(store, NotFound, lambda t: t.set_event_scope("e1", "ghost"), "ES-03 unknown Scope")
    assert tx(store, lambda t: t.event("e1").scope_id) == "", "ES-03: a refused scope was kept"


def test_event_scope_defaults_empty(store: Store, clock: FakeClock) -> None:
    """ES-05: an Event accepted on its own has no scope and is listed under ""."""
    tx(store, lambda t: t.accept_event(make_event("e1")))
    stored = tx(store, lambda t: t.event("e1"))
    assert stored.scope_id == "", "ES-05: an Event accepted on its own has a scope"
    assert ids(tx(store, lambda t: t.scope_events([""]))) == ["e1"], (
        "ES-05: scope_events([''] ) does not list unscoped Events"
    )
