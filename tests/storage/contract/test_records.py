"""Identity and records (checklist §1, ID), continued: dotted identifiers, JSON
payloads, fixed Work fields, parents and tombstones.
"""

from __future__ import annotations

from dataclasses import replace

from storage import Conflict, Invalid, NotFound, Payload, Store, Tx, Work

from ..support import (
    FakeClock,
    fails,
    get_work,
    ids,
    key,
    make_event,
    make_scope,
    make_work,
    payload,
    put_works,
    raises,
    tx,
    update_work,
)
from ._helpers import CANCELLED, RAW_JSON

# ---------------------------------------------------------------------------------
# 1. Identity and records (ID), continued: record fields
# ---------------------------------------------------------------------------------

# Dotted namespace identifiers (resolution 1): lowercase [a-z0-9_-] segments joined by
# dots, at least two segments, at most 200 characters.
VALID_DOTTED = [
    "a.b",
    "conduit.github.issue",
    "x-1.y_2",
    "a0.b1.c2.d3",
    "a" * 99 + "." + "b" * 100,  # exactly 200 characters
]
INVALID_DOTTED = [
    "",
    "nodot",
    "Conduit.test",
    "a..b",
    ".a.b",
    "a.b.",
    "a b.c",
    "a.b/c",
    "a.b:c",
    "\u00e9t\u00e9.b",
    "a" * 100 + "." + "b" * 100,  # 201 characters
]

INVALID_JSON = [b"{not json", b"", b'{"a": 1', b"\xff\xfe", b"[1,]"]


def test_dotted_identifiers(store: Store, clock: FakeClock) -> None:
    """ID-08 (resolution 1): Work kind, Event type and payload schema are dotted
    identifiers; malformed ones are Invalid, valid ones are stored exactly."""

    def check(t: Tx) -> None:
        for n, value in enumerate(INVALID_DOTTED):
            bad_work = make_work(f"bad-{n}", kind=value)
            bad_type = make_event(f"bad-{n}", type=value)
            bad_schema = make_event(f"bad-p{n}", payload=payload(schema=value))
            raises(Invalid, lambda w=bad_work: t.put_work(w), f"ID-08 Work kind {value!r}")
            raises(Invalid, lambda e=bad_type: t.accept_event(e), f"ID-08 event type {value!r}")
            raises(
                Invalid, lambda e=bad_schema: t.accept_event(e), f"ID-08 payload schema {value!r}"
            )
        for n, value in enumerate(VALID_DOTTED):
            t.put_work(make_work(f"ok-{n}", kind=value))
            t.accept_event(make_event(f"ok-{n}", type=value, payload=payload(schema=value)))

    tx(store, check)

    def read(t: Tx) -> tuple[list[str], list[str], list[str]]:
        works = [t.work(f"ok-{n}").kind for n in range(len(VALID_DOTTED))]
        events = [t.event(f"ok-{n}").event for n in range(len(VALID_DOTTED))]
        schemas = [e.payload.schema if e.payload else "" for e in events]
        return works, [e.type for e in events], schemas

    assert tx(store, read) == (VALID_DOTTED, VALID_DOTTED, VALID_DOTTED), (
        "ID-08: a valid dotted identifier was not stored exactly"
    )
    assert ids(tx(store, lambda t: t.works())) == [f"ok-{n}" for n in range(len(VALID_DOTTED))], (
        "ID-08: a Work with a malformed kind was stored"
    )


def test_payload_json_round_trip(store: Store, clock: FakeClock) -> None:
    """ID-09, ID-10, O-07: payloads need a dotted schema and valid JSON bytes; valid
    bytes round-trip byte for byte; an absent payload stays absent."""

    def write(t: Tx) -> None:
        for n, data in enumerate(INVALID_JSON):
            event = make_event(f"bad-{n}", payload=payload(data))
            work = make_work(f"bad-{n}", context=payload(data))
            raises(Invalid, lambda e=event: t.accept_event(e), f"ID-09 event payload {data!r}")
            raises(Invalid, lambda w=work: t.put_work(w), f"ID-09 Work context {data!r}")
        raises(
            Invalid,
            lambda: t.accept_event(make_event("no-schema", payload=Payload("", b"{}"))),
            "ID-09 payload bytes without a schema",
        )
        t.accept_event(make_event("raw", payload=payload(RAW_JSON)))
        t.accept_event(make_event("absent"))
        t.put_work(make_work("w1", context=payload(RAW_JSON)))
        t.put_work(make_work("w2"))

    tx(store, write)

    def read(t: Tx) -> tuple[Payload | None, Payload | None, Payload | None, Payload | None]:
        return (
            t.event("raw").event.payload,
            t.event("absent").event.payload,
            t.work("w1").context,
            t.work("w2").context,
        )

    raw, absent, context, no_context = tx(store, read)
    assert raw == Payload("test.payload", RAW_JSON), (
        f"ID-10: Event payload bytes were not kept byte for byte: {raw!r}"
    )
    assert context == Payload("test.payload", RAW_JSON), (
        f"ID-10: Work context bytes were not kept byte for byte: {context!r}"
    )
    assert absent is None, "ID-09: an absent Event payload came back present"
    assert no_context is None, "ID-09: an absent Work context came back present"
    assert ids(tx(store, lambda t: t.events())) == ["raw", "absent"], (
        "ID-09: an Event with an invalid payload was stored"
    )
    assert ids(tx(store, lambda t: t.works())) == ["w1", "w2"], (
        "ID-09: a Work with an invalid context was stored"
    )


def test_work_fixed_fields(store: Store, clock: FakeClock) -> None:
    """ID-11: Work kind, scope and parent are fixed at creation; changing any is
    Invalid and leaves the record unchanged."""
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2"))])
    put_works(store, make_work("wp"), make_work("wq"))
    (w,) = put_works(store, make_work("w1", scope_id="s1", parent_id="wp"))
    for what, changed in [
        ("kind", replace(w, kind="conduit.other")),
        ("scope", replace(w, scope_id="s2")),
        ("scope cleared", replace(w, scope_id="")),
        ("parent", replace(w, parent_id="wq")),
        ("parent cleared", replace(w, parent_id="")),
    ]:
        fails(store, Invalid, lambda t, c=changed: t.put_work(c), f"ID-11 {what} change")
    assert get_work(store, "w1") == w, "ID-11: a refused kind/scope/parent change was applied"


def test_work_parent_and_scope_must_exist(store: Store, clock: FakeClock) -> None:
    """ID-12: a Work's parent must exist (NotFound) and not be itself (Invalid); a
    parent created earlier in the same tx counts; a named scope must exist."""
    fails(
        store,
        NotFound,
        lambda t: t.put_work(make_work("w1", parent_id="ghost")),
        "ID-12 missing parent",
    )
    fails(store, Invalid, lambda t: t.put_work(make_work("w1", parent_id="w1")), "ID-12 self")
    fails(store, NotFound, lambda t: t.put_work(make_work("w1", scope_id="ghost")), "missing scope")

    def same_tx(t: Tx) -> Work:
        t.put_work(make_work("parent"))
        return t.put_work(make_work("child", parent_id="parent"))

    child = tx(store, same_tx)
    assert child.parent_id == "parent", "ID-12: a parent created in the same tx was refused"
    assert ids(tx(store, lambda t: t.works())) == ["child", "parent"], (
        "ID-12: a Work with a bad parent or scope was stored"
    )


def test_terminal_work_is_a_tombstone(store: Store, clock: FakeClock) -> None:
    """ID-13, CK-02: terminal Work stays readable and keeps owning its keys; the API
    has no Work delete."""
    k = key("issue-1")
    put_works(store, make_work("w1", keys=[k]))
    update_work(store, "w1", state=CANCELLED)

    def read(t: Tx) -> tuple[Work, Work, bool]:
        return t.work("w1"), t.work_by_key(k), hasattr(t, "delete_work")

    work, owner, deletable = tx(store, read)
    assert work.state == CANCELLED, "ID-13: a terminal Work is no longer readable"
    assert owner.id == "w1", "ID-13: a terminal Work no longer owns its key"
    assert not deletable, "ID-13: the storage API exposes a Work delete"
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w2", keys=[k])),
        "ID-13 replay of a terminal Work's key",
    )
