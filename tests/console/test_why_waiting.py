"""Why is this Work waiting: the Work page says what would wake each active Wait, when
it times out, and its near misses (recent Events of the awaited type that did not wake
it, each with the reason from the rule the runtime wakes with), in a read that costs
the same whatever the history."""

from __future__ import annotations

import re

import pytest
from django.db import connections

from console.works import waiting as waiting_module
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

KEY = ("shop", "order-7")


def granted(event_id: str, key: tuple[str, str], *, work_id: str = "", route: str = ""):
    """An approval.granted Event on ``key``, naming ``work_id``, routed to ``route``."""
    f.event(event_id, type="approval.granted", keys=[key], work_id=work_id)
    if route:
        f.transact(lambda tx: tx.mark_routed(event_id, route, "routed"))


def near_misses(html: str) -> dict[str, str]:
    """Event ID -> the text of its near-miss line."""
    start = html.index('<ul class="near-misses">')
    part = html[start : html.index("</ul>", start)]
    out = {}
    for item in part.split("<li>")[1:]:
        event_id = re.search(r'href="/events/([^"]+)"', item).group(1)
        out[event_id] = " ".join(re.sub(r"<[^>]+>", "", item).split())
    return out


@pytest.fixture
def order_7():
    f.work("order-8", keys=[("shop", "order-8")])
    granted("e-early", KEY, work_id="order-7")  # before the Wait's boundary
    f.parked("order-7", keys=[KEY], wait_keys=[KEY], after_latest=True, timeout_in=900)
    granted("e-other", ("shop", "order-8"), route="order-8")
    granted("e-pending", KEY)  # the right key, not routed yet
    f.event("e-noise", type="push.received", work_id="order-7")  # not the awaited type


def test_the_work_page_says_what_would_wake_it_and_when_it_times_out(as_bob, order_7):
    html = as_bob.get("/works/order-7").content.decode()
    text = " ".join(re.sub(r"<[^>]+>", "", html).split())
    boundary = f.transact(lambda tx: tx.wait("order-7-wait").after_sequence)

    assert "Why is this Work waiting?" in text
    assert (
        "wakes on the first Event of approval.granted, carrying key shop/order-7, routed to "
        f"this Work and accepted after #{boundary}." in text
    )
    assert re.search(r'Times out at <time class="countdown" datetime="[^"]+"', html)
    assert "· in 1" in text  # 14-15 minutes left at render


def test_near_misses_say_why_each_event_did_not_wake_it(as_bob, order_7):
    html = as_bob.get("/works/order-7").content.decode()
    found = near_misses(html)
    boundary = f.transact(lambda tx: tx.wait("order-7-wait").after_sequence)

    assert list(found) == ["e-pending", "e-other", "e-early"]  # newest first, type only
    assert f"arrived before the Wait: #{boundary}, not after #{boundary}" in found["e-early"]
    assert "another key: shop/order-8, not shop/order-7" in found["e-other"]
    assert "routed to another Work (order-8)" in found["e-other"]
    assert "not routed yet: the runtime has not taken it" in found["e-pending"]
    assert "another key" not in found["e-pending"]
    assert 'href="/events/e-other"' in html


def test_a_wait_without_a_timeout_or_near_misses_says_so(as_bob):
    f.parked("lonely", timeout_in=60)
    f.transact(lambda tx: tx.delete_timer("lonely-timeout", tx.timer("lonely-timeout").revision))
    text = " ".join(re.sub(r"<[^>]+>", "", as_bob.get("/works/lonely").content.decode()).split())

    assert "its timeout has fired (or its Timer was removed)" in text
    assert "No near misses: no Event of type approval.granted has been accepted." in text


def test_an_ended_wait_is_not_explained(as_bob, order_7):
    f.transact(lambda tx: tx.mark_routed("e-pending", "order-7", "routed"))
    from dataclasses import replace

    from storage import WaitState

    f.transact(
        lambda tx: tx.put_wait(
            replace(tx.wait("order-7-wait"), state=WaitState.WOKEN, woken_by="e-pending")
        )
    )
    assert "Why is this Work waiting?" not in as_bob.get("/works/order-7").content.decode()


def test_the_explanation_costs_one_read_whatever_the_history(
    as_bob, order_7, django_assert_num_queries, monkeypatch
):
    monkeypatch.setattr(waiting_module, "NEAR_MISSES", 5)
    counts = []
    for more in (0, 40):
        for n in range(more):
            granted(f"later-{n:02d}", ("shop", f"other-{n}"))
        # BEGIN, the snapshot (with the latest sequence), Work, children, attempts,
        # timeline, Waits, Timers, the near misses (one read per active Wait), COMMIT.
        with django_assert_num_queries(10, connection=connections["view"]) as ctx:
            html = as_bob.get("/works/order-7").content.decode()
        counts.append(len(ctx.captured_queries))
        assert len(near_misses(html)) == (3 if not more else 5)
    assert counts[0] == counts[1]
