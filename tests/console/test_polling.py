"""Live updates: polling regions, the interval picker and the cheap "unchanged"."""

import re
from dataclasses import dataclass

import pytest
from django.db import connections

from console.polling import COOKIE, polled_view
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.polling import poll_url_of

pytestmark = DB

LIVE_PAGES = ["/", "/works/w1", "/events", "/executions", "/waits", "/timers", "/scopes"]


def stamp_of(html: str) -> str:
    return re.search(r'data-stamp="([\w.-]+)"', html).group(1)


@pytest.fixture
def some_work():
    f.scope("acme")
    f.parked("w1", scope_id="acme")
    f.event("e1", work_id="w1")


@pytest.mark.parametrize("path", LIVE_PAGES)
def test_a_poll_with_an_unchanged_stamp_is_a_204_after_one_cheap_read(
    as_alice, some_work, path, django_assert_num_queries
):
    html = as_alice.get(path).content.decode()
    url = poll_url_of(html)

    # BEGIN, snapshot (with the store version and latest sequence), COMMIT: nothing else.
    with django_assert_num_queries(3, connection=connections["view"]):
        response = as_alice.get(url, HTTP_HX_REQUEST="true")

    assert response.status_code == 204
    assert response["HX-Reswap"] == "none"
    assert response.content == b""


# A change each live page shows (a change it does not show answers 204:
# tests/console/test_region_stamps.py).
SHOWN_CHANGE = {
    "/": lambda: f.work("w2"),
    "/works/w1": lambda: f.event("e2", work_id="w1"),
    "/events": lambda: f.event("e2"),
    "/executions": lambda: f.running("w2"),
    "/waits": lambda: f.parked("w2"),
    "/timers": lambda: f.timer("t2"),
    "/scopes": lambda: f.scope("beta"),
}


@pytest.mark.parametrize("path", LIVE_PAGES)
def test_a_poll_after_a_change_gets_the_fresh_fragment(as_alice, some_work, path):
    url = poll_url_of(as_alice.get(path).content.decode())
    SHOWN_CHANGE[path]()

    response = as_alice.get(url, HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert stamp_of(html) != url.rsplit("stamp=", 1)[1]


def test_the_poll_keeps_the_filter_and_carries_the_stamp(as_alice, some_work):
    html = as_alice.get("/?kind=billing.charge&state=waiting").content.decode()

    url = poll_url_of(html)
    assert url.startswith("/?kind=billing.charge&state=waiting&stamp=")
    assert 'hx-trigger="every 5s, consolewake"' in html


def test_a_stamp_without_htmx_still_renders_the_page(as_alice, some_work):
    stamp = stamp_of(as_alice.get("/").content.decode())

    response = as_alice.get(f"/?stamp={stamp}")

    assert response.status_code == 200
    assert b"<html" in response.content


@pytest.mark.parametrize(("every", "trigger"), [("2", "every 2s"), ("60", "every 60s")])
def test_the_interval_picker_sets_the_poll_interval(as_alice, some_work, every, trigger):
    response = as_alice.post("/preferences/poll", {"every": every, "next": "/events?unrouted=1"})

    assert response.status_code == 302
    assert response["Location"] == "/events?unrouted=1"
    assert response.cookies[COOKIE].value == every
    assert f'hx-trigger="{trigger}, consolewake"' in as_alice.get("/").content.decode()


def test_off_stops_polling(as_alice, some_work):
    as_alice.post("/preferences/poll", {"every": "0", "next": "/"})

    html = as_alice.get("/").content.decode()

    assert "data-poll" not in html
    assert "hx-trigger" not in html
    assert '<option value="0" selected>off</option>' in html


def test_the_picker_refuses_to_redirect_off_site(as_alice):
    response = as_alice.post("/preferences/poll", {"every": "5", "next": "https://evil.example/"})

    assert response["Location"] == "/"


def test_older_event_pages_do_not_poll(as_alice, some_work):
    html = as_alice.get("/events?before=2").content.decode()

    assert "data-poll" not in html


def test_polled_view_skips_the_build_while_nothing_committed(some_work):
    built: list[str] = []

    @dataclass(frozen=True)
    class Page:
        now: int
        stamp: str
        revision: int

    def build(tx, stamp):
        built.append(stamp)
        return Page(tx.now, stamp, tx.work("w1").revision)

    page = polled_view("", build)
    assert polled_view(page.stamp, build) is None
    assert len(built) == 1  # the store part alone said "unchanged"

    f.parked("w2")  # a commit the page does not show: built, hashed, still unchanged
    assert polled_view(page.stamp, build) is None
    assert len(built) == 2
    f.transact(lambda tx: tx.put_work(tx.work("w1")))  # what the page shows: a revision
    assert polled_view(page.stamp, build).revision == page.revision + 1


@dataclass(frozen=True)
class Due:
    now: int
    stamp: str
    due: bool  # what a time-driven figure is: it changes without any write


def test_a_period_rebuilds_once_it_turns_so_time_driven_figures_refresh(some_work):
    minute = 60 * 10**9
    built: list[int] = []

    def build(tx, stamp):
        built.append(tx.now)
        return Due(tx.now, stamp, tx.now >= 11 * minute)

    first = polled_view("", build, now=10 * minute, period=minute)
    assert polled_view(first.stamp, build, now=10 * minute + 1, period=minute) is None
    assert len(built) == 1  # same minute, nothing committed: not rebuilt
    later = polled_view(first.stamp, build, now=11 * minute, period=minute)
    assert later.due
