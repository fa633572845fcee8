"""One identifier rule on every backend (issue 20): at most 255 bytes of UTF-8 for an
ID, a correlation key's source and external ID, an Event's source and delivery ID and
a KV namespace, 1,024 for a KV key, and no NUL; refused as Invalid before any write
(on PostgreSQL these failed at commit as Unavailable, which tells a client to retry)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage import Invalid, Store, Tx

from ..support import FakeClock, key, make_event, make_work, tx

AT_LIMIT = "€" * 85  # 255 bytes of UTF-8, 85 characters


@pytest.mark.parametrize(
    "bad",
    ["x" * 256, "€" * 85 + "x", "a\x00b", "\ud800"],
    ids=["256-bytes", "256-bytes-multibyte", "nul", "surrogate"],
)
def test_it_refuses_an_identifier_the_rule_forbids_before_any_write(
    store: Store, clock: FakeClock, bad: str
) -> None:
    for write in (
        lambda t: t.put_work(make_work(bad)),
        lambda t: t.put_work(make_work("w1", keys=[key(bad)])),
        lambda t: t.accept_event(make_event(bad)),
        lambda t: t.accept_event(replace(make_event("e1"), delivery_id=bad)),
        lambda t: t.kv_put(bad, "k", b"v"),
        lambda t: t.put_work(replace(make_work("w1"), scope_id=bad)),
    ):
        with pytest.raises(Invalid):
            tx(store, write)
    assert tx(store, lambda t: (t.works(), t.events())) == ([], [])


def test_it_takes_every_identifier_at_the_limit(store: Store, clock: FakeClock) -> None:
    def fn(t: Tx) -> None:
        t.put_work(make_work(AT_LIMIT, keys=[key(AT_LIMIT)]))
        t.accept_event(replace(make_event(AT_LIMIT), delivery_id=AT_LIMIT))
        t.kv_put(AT_LIMIT, "k" * 1024, b"v")

    tx(store, fn)

    assert tx(store, lambda t: t.work(AT_LIMIT).id) == AT_LIMIT
    assert tx(store, lambda t: t.kv_get(AT_LIMIT, "k" * 1024)) == b"v"
    with pytest.raises(Invalid):
        tx(store, lambda t: t.kv_put("ns", "k" * 1025, b"v"))


def test_it_refuses_a_disposition_over_64_bytes(store: Store, clock: FakeClock) -> None:
    tx(store, lambda t: t.accept_event(make_event("e1")))

    with pytest.raises(Invalid, match="disposition"):
        tx(store, lambda t: t.mark_routed("e1", "", "d" * 65))
    tx(store, lambda t: t.mark_routed("e1", "", "d" * 64))
