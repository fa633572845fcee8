"""The Event stream (newest first, cursor paging) and the Event page's causation."""

import re

import pytest

from console.events import views as event_views
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

ROW = re.compile(r'<td class="mono"><a href="/events/([^"]+)">\d+</a></td>')


def ids(response) -> list[str]:
    return ROW.findall(response.content.decode())


@pytest.fixture
def stream():
    f.scope("acme")
    f.work("w1", scope_id="acme")
    f.work("w2")
    f.event(
        "e1",
        source="github",
        type="push.received",
        work_id="w1",
        scope_id="acme",
        route="routed",
        data={"ref": "main"},
    )
    f.event("e2", source="stripe", type="charge.failed", work_id="w2")
    f.event("e3", source="github", type="check.done", work_id="w1", causation="e1")
    f.event("e4", source="core.timer", type="timer.fired", causation="e3")


def test_it_lists_events_newest_first(as_alice, stream):
    response = as_alice.get("/events")

    assert response.status_code == 200
    assert ids(response) == ["e4", "e3", "e2", "e1"]
    assert b"badge-unrouted" in response.content
    assert b"badge-route-routed" in response.content


def test_it_says_what_would_appear_when_there_are_no_events(as_alice):
    assert b"No Events yet." in as_alice.get("/events").content


@pytest.mark.parametrize(
    ("qs", "expected"),
    [
        ("source=github", ["e3", "e1"]),
        ("type=charge.failed", ["e2"]),
        ("scope=acme", ["e1"]),
        ("work=w1", ["e3", "e1"]),
        ("unrouted=1", ["e4", "e3", "e2"]),
        ("unrouted=1&source=github", ["e3"]),
        ("source=nobody", []),
    ],
)
def test_each_event_filter_narrows_the_stream(as_alice, stream, qs, expected):
    assert ids(as_alice.get(f"/events?{qs}")) == expected


def test_the_stream_pages_older_and_newer_by_sequence(as_alice, monkeypatch):
    monkeypatch.setattr(event_views, "EVENT_PAGE_SIZE", 3)
    for i in range(8):
        f.event(f"e{i}")

    first = as_alice.get("/events")
    older = re.search(r'rel="next" href="([^"]+)"', first.content.decode()).group(1)
    second = as_alice.get("/events" + older)
    newer = re.search(r'rel="prev" href="([^"]+)"', second.content.decode()).group(1)
    back = as_alice.get("/events" + newer)

    assert ids(first) == ["e7", "e6", "e5"]
    assert ids(second) == ["e4", "e3", "e2"]
    assert ids(back) == ["e7", "e6", "e5"]


def test_a_bad_cursor_is_a_400(as_alice):
    response = as_alice.get("/events?before=yesterday")

    assert response.status_code == 400
    assert b"acceptance sequence" in response.content


def test_the_event_page_follows_causation_up_and_down(as_alice, stream):
    html = as_alice.get("/events/e3").content.decode()

    chain = html[
        html.index('<ol class="chain">') : html.index("</ol>", html.index('<ol class="chain">'))
    ]
    assert 'href="/events/e1"' in chain  # what it derives from
    derived = html[html.index("Derived from this Event") :]
    assert 'href="/events/e4"' in derived  # what derives from it
    assert "&quot;" not in chain


def test_the_event_page_shows_the_envelope_and_pretty_payload(as_alice, stream):
    html = as_alice.get("/events/e1").content.decode()

    assert "d-e1" in html  # delivery ID
    assert 'href="/works/w1"' in html
    assert "{\n  &quot;ref&quot;: &quot;main&quot;\n}" in html
    assert "Nothing caused this Event" in html


def test_an_unknown_event_is_a_404(as_alice):
    assert as_alice.get("/events/nope").status_code == 404
