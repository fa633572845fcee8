"""Everything about a correlation key: the page the key chips on Work and Event pages
link to (the owner Work, its Waits on the key, every Event carrying it, newest first,
keyset pages), the Event stream's key filter, and any key the storage rules accept
working through the chip's URL; one View with a query count that does not grow with
the history."""

from __future__ import annotations

import html as markup
import re
from dataclasses import replace

import pytest
from django.db import connections

from console.keys import views as key_views
from storage import WaitState
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

KEY = ("shop", "order-7")
EVENT_ROW = re.compile(r'<td class="mono"><a href="/events/([^"]+)">\d+</a></td>')


def exactly_255_bytes(prefix: str) -> str:
    body = prefix + "€" * ((255 - len(prefix.encode())) // 3)
    return body + "x" * (255 - len(body.encode()))


ODD = {
    "255-bytes": ("shop", exactly_255_bytes("o-")),
    "255-byte-source": (exactly_255_bytes("s/"), "x"),
    "slashes": ("shop/eu", "a/b/../c"),
    "query-chars": ("q?a=1&b", "50%off%2F#x"),
    "spaces": (" sp ace", "trail "),
    "plus-and-tilde": ("a+b", "~/~"),
    "bidi-emoji": ("rtl\u202e", "🚀/👩\u200d💻"),
}


def events(response) -> list[str]:
    return EVENT_ROW.findall(response.content.decode())


def link(response, rel: str) -> str:
    href = re.search(rf'rel="{rel}" href="([^"]+)"', response.content.decode()).group(1)
    return markup.unescape(href)


def chip_urls(html: str) -> list[str]:
    return [markup.unescape(u) for u in re.findall(r'<a class="key mono" href="([^"]+)"', html)]


@pytest.fixture
def order_7():
    f.parked("order-7", keys=[KEY], wait_keys=[KEY])
    f.work("order-8", keys=[("shop", "order-8")])
    f.event("e1", type="order.placed", keys=[KEY])
    f.event("e2", type="order.placed", keys=[("shop", "order-8")])
    f.event("e3", type="order.paid", keys=[("shop", "order-8"), KEY])


def test_the_key_page_lists_the_owner_its_waits_and_the_events_newest_first(as_bob, order_7):
    response = as_bob.get("/keys?source=shop&id=order-7")
    html = response.content.decode()

    assert response.status_code == 200
    assert events(response) == ["e3", "e1"]
    assert 'href="/works/order-7"' in html
    assert "order-7-wait" in html
    assert "order-8" not in html.split("Events carrying this key")[0]
    assert "KV entries are not listed" in html


def test_a_key_nobody_owns_says_so(as_bob):
    f.event("lone", keys=[("github", "pr-1")])
    html = as_bob.get("/keys?source=github&id=pr-1").content.decode()

    assert "No Work owns this key" in html
    assert "No Wait listens on this key." in html
    assert 'href="/events/lone"' in html


def test_key_chips_on_the_work_and_event_pages_link_to_it(as_bob, order_7):
    work_chips = chip_urls(as_bob.get("/works/order-7").content.decode())
    event_chips = chip_urls(as_bob.get("/events/e3").content.decode())

    assert "/keys?source=shop&id=order-7" in work_chips
    assert event_chips == ["/keys?source=shop&id=order-8", "/keys?source=shop&id=order-7"]


@pytest.mark.parametrize("name", list(ODD))
def test_any_key_the_store_accepts_works_from_its_chip(as_bob, name):
    source, external_id = ODD[name]
    f.work("w", keys=[(source, external_id)])
    f.event("carrier", keys=[(source, external_id)])
    f.event("other", keys=[("elsewhere", external_id)])  # the same ID, another source
    [url] = chip_urls(as_bob.get("/works/w").content.decode())

    response = as_bob.get(url)
    assert response.status_code == 200
    assert events(response) == ["carrier"]
    assert 'href="/works/w"' in response.content.decode()


@pytest.mark.parametrize(
    "qs",
    ["", "source=shop", "id=order-7", "source=a%00b&id=x", "source=s&id=" + "x" * 256],
)
def test_a_missing_or_refused_key_is_a_400_page(as_bob, qs):
    response = as_bob.get(f"/keys?{qs}")

    assert response.status_code == 400
    assert b"<html" in response.content


def test_the_stream_filters_by_key(as_bob, order_7):
    assert events(as_bob.get("/events?key_source=shop&key_id=order-7")) == ["e3", "e1"]
    assert events(as_bob.get("/events?key_source=shop&key_id=order-8&type=order.paid")) == ["e3"]
    assert as_bob.get("/events?key_source=shop").status_code == 400
    html = as_bob.get("/keys?source=shop&id=order-7").content.decode()
    assert 'href="/events?key_source=shop&amp;key_id=order-7"' in html


def test_the_events_page_by_keyset(as_bob, monkeypatch):
    monkeypatch.setattr(key_views, "EVENT_PAGE_SIZE", 3)
    for n in range(7):
        f.event(f"k{n}", keys=[KEY])
        f.event(f"n{n}", keys=[("shop", "other")])
    first = as_bob.get("/keys?source=shop&id=order-7")
    older = markup.unescape(
        re.search(r'rel="next" href="([^"]+)"', first.content.decode()).group(1)
    )
    second = as_bob.get("/keys" + older)
    newer = markup.unescape(
        re.search(r'rel="prev" href="([^"]+)"', second.content.decode()).group(1)
    )

    assert events(first) == ["k6", "k5", "k4"]
    assert events(second) == ["k3", "k2", "k1"]
    assert events(as_bob.get("/keys" + newer)) == ["k6", "k5", "k4"]


def test_an_ended_wait_on_the_key_is_listed_with_its_state(as_bob, order_7):
    f.transact(lambda tx: tx.put_wait(replace(tx.wait("order-7-wait"), state=WaitState.CANCELLED)))
    assert "badge-cancelled" in as_bob.get("/keys?source=shop&id=order-7").content.decode()


def test_the_key_page_costs_the_same_whatever_the_history(
    as_bob, order_7, django_assert_num_queries, monkeypatch
):
    monkeypatch.setattr(key_views, "EVENT_PAGE_SIZE", 5)
    counts = []
    for more in (0, 40):
        for n in range(more):
            f.event(f"more-{n}", keys=[KEY])
            f.event(f"else-{n}", keys=[("shop", f"o-{n}")])
        # BEGIN, the snapshot (with the latest sequence), the key's owner (its key row,
        # its Work), its Waits, the Events, COMMIT.
        with django_assert_num_queries(7, connection=connections["view"]) as ctx:
            assert as_bob.get("/keys?source=shop&id=order-7").status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]
